#!/usr/bin/env bash
# Set up and run pyrepro's test suite on a fresh machine. README's test command; .ci/run calls it.
# - installs Debian's nix-bin, busybox-static, graphviz and bubblewrap (the sandbox of foreign code)
#   when apt-get is available (root)
# - creates .venv with pyrepro and its dev dependencies
# - runs pytest: unit tests, integration tests (the flake evaluated against the real dream2nix when
#   ../shared/nix-sources is there), and one light end-to-end model run
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  need=""
  command -v nix-instantiate >/dev/null 2>&1 || need="$need nix-bin"
  [ -x /bin/busybox ] || need="$need busybox-static"
  command -v dot >/dev/null 2>&1 || need="$need graphviz"
  command -v zip >/dev/null 2>&1 || need="$need zip"
  command -v patch >/dev/null 2>&1 || need="$need patch"
  command -v bwrap >/dev/null 2>&1 || need="$need bubblewrap"
  if [ -n "$need" ]; then
    echo "== apt-get install$need"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need >/dev/null || \
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need >/dev/null; }
  fi
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
# The real-dream2nix evaluation (tests/test_nix_dream2nix.py) needs dream2nix, pyproject.nix and
# nixpkgs.lib offline: $PYREPRO_NIX_SOURCES when set, else ../shared/nix-sources beside the
# checkout (only read; the harness checks their NAR hashes against flake.lock). Neither: it skips.
if [ -z "${PYREPRO_NIX_SOURCES:-}" ] && [ -d ../shared/nix-sources ]; then
  PYREPRO_NIX_SOURCES=$(realpath ../shared/nix-sources)
  export PYREPRO_NIX_SOURCES
fi
echo "== nix sources: ${PYREPRO_NIX_SOURCES:-none (the real-dream2nix tests skip)}"
echo "== pytest"
exec .venv/bin/python -m pytest -q -m "not conformance" "$@"
