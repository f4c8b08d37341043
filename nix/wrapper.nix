# The run wrapper of one model, separated from dream2nix so the test flake can use it with a
# busybox stand-in.  `pkgs` needs only `writeScriptBin`-like `writeShellScriptBin`;
# `pythonEnv` is the model's Python environment (a derivation with bin/python), `src` the
# patched source folder, `benchmarks` the pinned benchmarks folder, `runtime` pyrepro's
# runtime folder (sitecustomize), `entry` the model.toml entry command.
# The wrapper copies the source into a fresh `mktemp -d` work directory and runs there, so
# neither the store nor the source is written.
{ pkgs }:
{ name, pythonEnv, src, benchmarks, runtime, entry, shell ? "/bin/sh", tools ? "" }:
let
  q = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] s + "'";
  cmd = builtins.concatStringsSep " " (map q entry);
in
pkgs.writeShellScriptBin name ''
  set -eu
  work="$(mktemp -d "''${TMPDIR:-/tmp}/pyrepro-${name}.XXXXXX")"
  cp -R ${src}/. "$work/"
  chmod -R u+w "$work"
  export HOME="''${HOME:-$work/home}"
  export XDG_CACHE_HOME="''${XDG_CACHE_HOME:-$HOME/.cache}"
  export PYREPRO_BENCHMARKS_DIR="''${PYREPRO_BENCHMARKS_DIR:-${benchmarks}}"
  export PYREPRO_DATA_DIR="''${PYREPRO_DATA_DIR:-$XDG_CACHE_HOME/pyrepro/data}"
  export PYTHONPATH="${runtime}''${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="${pythonEnv}/bin${tools}:$PATH"
  mkdir -p "$HOME" "$XDG_CACHE_HOME" "$PYREPRO_DATA_DIR"
  cd "$work"
  case " $* " in
    *" --benchmarks-dir"*) exec ${cmd} "$@" ;;
    *) exec ${cmd} --benchmarks-dir "$PYREPRO_BENCHMARKS_DIR" "$@" ;;
  esac
''
