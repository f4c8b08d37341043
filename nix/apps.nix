# `exfoliation` app: runs every model serving dft_3d_exfoliation_energy in turn, passes the
# arguments (e.g. --test) through, prints a summary; one failure does not stop the others.
# Needs only `pkgs.writeShellScriptBin`; `models` is { name = package with bin/<name>; }.
{ pkgs, registry, models, benchmark ? "dft_3d_exfoliation_energy" }:
let
  names = builtins.filter
    (n: builtins.elem benchmark (registry.${n}.benchmarks or [ ]) && models ? ${n})
    (builtins.attrNames registry);
  runOne = n: ''
    echo "== ${n}"
    if ${models.${n}}/bin/${n} "$@"; then ok="$ok ${n}"; else fail="$fail ${n}"; fi
  '';
  script = pkgs.writeShellScriptBin "exfoliation" ''
    ok=""; fail=""
    ${builtins.concatStringsSep "\n" (map runOne names)}
    echo "exfoliation: ok:''${ok:- none} failed:''${fail:- none}"
    [ -z "$fail" ]
  '';
in
{
  exfoliation = { type = "app"; program = "${script}/bin/exfoliation"; };
}
