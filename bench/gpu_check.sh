#!/usr/bin/env bash
# End-to-end GPU check, for a machine with an NVIDIA GPU (none is available where pyrepro
# is developed, so GPU runs are marked unverified in docs/STATUS.md until this passes).
#
#   bash bench/gpu_check.sh [MODEL]      (default MODEL: alignn, a torch model with gpu = "optional")
#
# Steps, each printed as PASS/FAIL with what it saw:
#   1. the driver is found (pyrepro doctor, and the shell wrapper's probe);
#   2. the model environment is built (local backend);
#   3. torch.cuda.is_available() is True inside that environment, through the wrapper;
#   4. the model runs in test mode with --gpu.
set -uo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-alignn}
PYREPRO=${PYREPRO:-.venv/bin/pyrepro}
fail=0
step() { printf '%-6s %s\n' "$1" "$2"; [ "$1" = PASS ] || fail=1; }

doc=$($PYREPRO doctor --json)
status=$(printf '%s' "$doc" | python3 -c 'import json,sys; c=[x for x in json.load(sys.stdin)["checks"] if x["name"]=="gpu driver"][0]; print(c["status"], c["detail"])')
case "$status" in ok*) step PASS "driver: ${status#ok }" ;; *) step FAIL "driver: $status" ;; esac
probe=$(PYREPRO_GPU_PROBE=1 sh pyrepro/data/gpu-wrapper.sh true | tr '\n' ' ')
case "$probe" in *found=yes*) step PASS "wrapper probe: $probe" ;; *) step FAIL "wrapper probe: $probe" ;; esac

if build=$($PYREPRO build "$MODEL" --json 2>build.err); then
  py=$(printf '%s' "$build" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d.get("python") or d.get("env_python"))')
  step PASS "built $MODEL: $py"
  if out=$(PYREPRO_GPU_NEED=required sh pyrepro/data/gpu-wrapper.sh "$py" -c \
      'import torch; assert torch.cuda.is_available(), "cuda not available"; print(torch.__version__, torch.cuda.get_device_name(0))' 2>&1); then
    step PASS "torch sees the GPU: $out"
  else
    step FAIL "torch does not see the GPU: $out"
  fi
else
  step FAIL "build $MODEL failed: $(tail -3 build.err)"
fi
rm -f build.err

if $PYREPRO run "$MODEL" --test --gpu --json > gpu_run.json; then
  step PASS "test-mode run with --gpu (record: gpu_run.json)"
else
  step FAIL "test-mode run with --gpu (see gpu_run.json)"
fi
exit $fail
