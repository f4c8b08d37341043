# The run wrapper of one model, separated from dream2nix so the test flake can use it with a
# busybox stand-in.  `pkgs` needs only `writeShellScriptBin`; `pythonEnv` is the model's Python
# environment (a derivation with bin/python), `src` the patched source folder, `benchmarks` the
# pinned folder of <benchmark>.json.zip files, `runtime` pyrepro's runtime folder
# (sitecustomize), `entry` the model.toml entry command, `tools` extra ":<dir>/bin" PATH entries.
#
# The wrapper copies the source into a fresh `mktemp -d` work directory and runs there with
# HOME, XDG_CACHE_HOME and MPLCONFIGDIR inside it, so neither the store, the source nor the
# user's home is written.  Datasets: $PYREPRO_DATA_DIR (default: the local backend's real-data
# folder <cache>/data/jarvis, cache = $PYREPRO_CACHE or ~/.cache/pyrepro, so both backends share
# downloads), $PYREPRO_DATA_KIND (default jarvis).  Predictions: --output-dir if given, else $PYREPRO_OUTPUT_DIR, else
# the directory the wrapper was started in.
{ pkgs }:
{ name, pythonEnv, src, benchmarks, runtime, entry, tools ? "" }:
let
  q = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] s + "'";
  cmd = builtins.concatStringsSep " " (map q entry);
in
pkgs.writeShellScriptBin name ''
  set -eu
  caller="$PWD"
  cache="''${PYREPRO_CACHE:-''${XDG_CACHE_HOME:-''${HOME:-/tmp}/.cache}/pyrepro}"
  export PYREPRO_DATA_DIR="''${PYREPRO_DATA_DIR:-$cache/data/jarvis}"
  export PYREPRO_DATA_KIND="''${PYREPRO_DATA_KIND:-jarvis}"
  export PYREPRO_BENCHMARKS_DIR="''${PYREPRO_BENCHMARKS_DIR:-${benchmarks}}"
  out="''${PYREPRO_OUTPUT_DIR:-$caller}"
  work="$(mktemp -d "''${TMPDIR:-/tmp}/pyrepro-${name}.XXXXXX")"
  cp -R ${src}/. "$work/"
  chmod -R u+w "$work"
  export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" MPLCONFIGDIR="$work/home/.mpl"
  export PYTHONPATH="${runtime}''${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="${pythonEnv}/bin${tools}:$PATH"
  mkdir -p "$HOME" "$XDG_CACHE_HOME" "$MPLCONFIGDIR" "$PYREPRO_DATA_DIR" "$out"
  echo "${name}: work dir $work" >&2
  cd "$work"
  case " $* " in
    *" --output-dir"*) exec ${cmd} "$@" ;;
    *) exec ${cmd} --output-dir "$out" "$@" ;;
  esac
''
