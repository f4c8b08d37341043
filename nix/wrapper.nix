# The run wrapper of one model, separated from dream2nix so the test flake can use it with a
# busybox stand-in.  `pkgs` needs only `writeShellScriptBin`; `pythonEnv` is the model's Python
# environment (a derivation with bin/python), `src` the patched source folder, `benchmarks` the
# pinned folder of <benchmark>.json.zip files, `runtime` pyrepro's runtime folder
# (sitecustomize), `entry` the model.toml entry command, `tools` extra ":<dir>/bin" PATH entries.
#
# The wrapper copies the source into a fresh `mktemp -d` work directory under $TMPDIR and runs
# there with HOME, XDG_CACHE_HOME and MPLCONFIGDIR inside it; the program runs as a child and
# the work directory is removed when it ends (also on Ctrl-C or SIGTERM, which are passed on).
# Written: the predictions folder, nothing else (not the store, the source or the user's home).
# Predictions: --output-dir if given, else $PYREPRO_OUTPUT_DIR, else
# <cache>/runs/<name>/<UTC time>-nix/out, where the local backend keeps its runs (cache =
# $PYREPRO_CACHE, else $XDG_CACHE_HOME/pyrepro, else ~/.cache/pyrepro); the path is printed.
# Datasets are only read: $PYREPRO_DATA_DIR (default <cache>/data/jarvis, the local backend's
# real-data folder, so both backends share downloads), $PYREPRO_DATA_KIND (default jarvis).
{ pkgs }:
{ name, pythonEnv, src, benchmarks, runtime, entry, tools ? "" }:
let
  q = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] s + "'";
  cmd = builtins.concatStringsSep " " (map q entry);
in
pkgs.writeShellScriptBin name ''
  set -eu
  cache="''${PYREPRO_CACHE:-''${XDG_CACHE_HOME:-''${HOME:-/tmp}/.cache}/pyrepro}"
  export PYREPRO_DATA_DIR="''${PYREPRO_DATA_DIR:-$cache/data/jarvis}"
  export PYREPRO_DATA_KIND="''${PYREPRO_DATA_KIND:-jarvis}"
  export PYREPRO_BENCHMARKS_DIR="''${PYREPRO_BENCHMARKS_DIR:-${benchmarks}}"
  case " $* " in
    *" --output-dir"*) out="" ;;
    *) out="''${PYREPRO_OUTPUT_DIR:-$cache/runs/${name}/$(date -u +%Y%m%dT%H%M%SZ)-nix/out}"
       mkdir -p "$out"
       set -- --output-dir "$out" "$@" ;;
  esac
  work="$(mktemp -d "''${TMPDIR:-/tmp}/pyrepro-${name}.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cp -R ${src}/. "$work/"
  chmod -R u+w "$work"
  export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" MPLCONFIGDIR="$work/home/.mpl"
  export PYTHONPATH="${runtime}''${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="${pythonEnv}/bin${tools}:$PATH"
  mkdir -p "$HOME" "$XDG_CACHE_HOME" "$MPLCONFIGDIR"
  echo "${name}: work dir $work (removed at exit)''${out:+; predictions to $out}" >&2
  cd "$work"
  ${cmd} "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null || :' INT TERM HUP
  status=0
  while :; do
    wait "$child" || status=$?
    kill -0 "$child" 2>/dev/null || break
  done
  cd /
  exit "$status"
''
