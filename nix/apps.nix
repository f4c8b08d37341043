# `exfoliation` app: runs every model serving dft_3d_exfoliation_energy in turn, passes the
# arguments (e.g. --test) through, prints a summary; one failure does not stop the others.
# Each model writes its predictions to $PYREPRO_OUTPUT_DIR/<name>/, by default
# <cache>/runs/exfoliation/<UTC time>/<name>/ (cache as in nix/wrapper.nix; never the caller's
# directory, which is often the checkout); the file names are the same for every model.
# Needs only `pkgs.writeShellScriptBin`; `models` is { name = package with bin/<name>; }.
{ pkgs, registry, models, benchmark ? "dft_3d_exfoliation_energy", appName ? "exfoliation" }:
let
  names = builtins.filter
    (n: builtins.elem benchmark (registry.${n}.benchmarks or [ ]) && models ? ${n})
    (builtins.attrNames registry);
  runOne = n: ''
    echo "== ${n}"
    if PYREPRO_OUTPUT_DIR="$base/${n}" ${models.${n}}/bin/${n} --benchmark ${benchmark} "$@"; then
      ok="$ok ${n}"
    else
      fail="$fail ${n}"
    fi
  '';
  script = pkgs.writeShellScriptBin appName ''
    ok=""; fail=""
    cache="''${PYREPRO_CACHE:-''${XDG_CACHE_HOME:-''${HOME:-/tmp}/.cache}/pyrepro}"
    base="''${PYREPRO_OUTPUT_DIR:-$cache/runs/${appName}/$(date -u +%Y%m%dT%H%M%SZ)}"
    ${builtins.concatStringsSep "\n" (map runOne names)}
    echo "${appName}: ok:''${ok:- none} failed:''${fail:- none} (predictions under $base)"
    [ -z "$fail" ]
  '';
in
{
  ${appName} = { type = "app"; program = "${script}/bin/${appName}"; };
}
