"""Seeds observed at run time (issue 14): the runtime records every seed call, including those a
library makes from its own config defaults, which no static reading of the entry script finds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyrepro import run

RUNTIME = Path(__file__).resolve().parent.parent / "pyrepro" / "runtime"


def test_seed_recorder__script_and_library_calls__recorded_with_callers(tmp_path: Path) -> None:
    lib = tmp_path / "fakelib"
    lib.mkdir()
    # a "library" that seeds from its config default, as alignn's TrainingConfig(random_seed=123)
    (lib / "__init__.py").write_text("import random\n\ndef train(config=None):\n"
                                     "    seed = (config or {}).get('random_seed', 123)\n    random.seed(seed)\n")
    (tmp_path / "run.py").write_text("import random\nimport fakelib\nrandom.seed(7)\nfakelib.train()\n"
                                     "print(round(random.random(), 6))\n")
    seeds = tmp_path / "seeds.jsonl"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{RUNTIME}:{tmp_path}", "PYREPRO_SEEDS_FILE": str(seeds)}
    done = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    plain = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, check=True,
                           env={**env, "PYREPRO_SEEDS_FILE": ""})
    assert done.stdout == plain.stdout and done.stderr == ""  # the recorder changes nothing else
    got = run.observed_seeds(seeds, {str(tmp_path): ""})
    assert got == [{"function": "random.seed", "value": 7, "caller": "run.py:3"},
                   {"function": "random.seed", "value": 123, "caller": "fakelib/__init__.py:5"}]


def test_seed_recorder__unset__nothing_written_and_no_hook(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import random, sys\nrandom.seed(1)\n"
                                     "print(type(sys.meta_path[0]).__name__, hasattr(random.seed, '_pyrepro_seed_wrapped'))\n")
    done = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(RUNTIME)})
    assert "_Finder" not in done.stdout and "False" in done.stdout
    assert list(tmp_path.iterdir()) == [tmp_path / "run.py"]


def test_observed_seeds__duplicates_paths_and_junk(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    rows = [{"function": "numpy.random.seed", "value": 1, "caller": "/w/run.py:3"}] * 3 + \
           [{"function": "torch.manual_seed", "value": 123, "caller": "/env/lib/alignn/train.py:90"}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n[1]\n")
    assert run.observed_seeds(f, {"/w": "", "/env": "<env>"}) == [
        {"function": "numpy.random.seed", "value": 1, "caller": "run.py:3"},
        {"function": "torch.manual_seed", "value": 123, "caller": "<env>/lib/alignn/train.py:90"}]
    assert run.observed_seeds(tmp_path / "missing", {}) == []
