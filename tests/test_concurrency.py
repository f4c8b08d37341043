"""Issue 44, item 1: one cache, several writers. The cache lock (``pyrepro.cachelock``) itself, then,
for real (PyPI), two builds and two reproductions of the same model at once, round after
round, with every environment, launcher, lock and record checked after each round."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro import batch, cachelock
from pyrepro.cachelock import LockTimeout
from pyrepro.progress import RecordingProgress

Write = Callable[..., Path]
PYREPRO = str(Path(sys.executable).parent / "pyrepro")
LIGHT = {"light/run.py": "import six\nprint(six.PY3)\n", "light/requirements.txt": "six==1.16.0\n"}
ROUNDS = 3


# ------------------------------------------------------------------------------------ the lock

_HOLD = """
import sys, time
from pathlib import Path
from pyrepro import cachelock
with cachelock.held(Path(sys.argv[1]), "thing"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(cache: Path, seconds: float) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", _HOLD, str(cache), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_held__another_process_holds_it__waits_says_whom_then_takes_it(tmp_path: Path) -> None:
    p = _holder(tmp_path, 1.5)
    progress = RecordingProgress()
    t0 = time.monotonic()
    with cachelock.held(tmp_path, "thing", progress=progress, label="build x"):
        waited = time.monotonic() - t0
        assert cachelock.is_held(tmp_path, "thing")
    p.wait(timeout=30)
    assert waited > 0.8
    assert any(kind == "advance" and label == "build x" and f"pid {p.pid}" in str(d)
               for kind, label, d in progress.events)
    assert not cachelock.is_held(tmp_path, "thing")


def test_held__timeout__lock_timeout_names_the_holder(tmp_path: Path) -> None:
    p = _holder(tmp_path, 10)
    try:
        with pytest.raises(LockTimeout, match=f"pid {p.pid}"), cachelock.held(tmp_path, "thing", timeout=0.3,
                                                                                poll=0.05):
            pass
    finally:
        p.kill()
        p.wait()


def test_held__holder_killed__released_at_once(tmp_path: Path) -> None:
    p = _holder(tmp_path, 60)
    assert cachelock.is_held(tmp_path, "thing")
    p.send_signal(signal.SIGKILL)
    p.wait()
    with cachelock.held(tmp_path, "thing", timeout=2.0):
        pass  # nothing stale is left: the kernel released it with its process


def test_lock_path__any_name__one_safe_file_under_locks(tmp_path: Path) -> None:
    p = cachelock.lock_path(tmp_path, "build-../../etc/passwd x")
    assert p.parent == tmp_path / "locks" and "/" not in p.name and p.name.endswith(".lock")


# ------------------------------------------------------------------------------------ for real

def _env(project: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYREPRO_ROOT": str(project), "PYREPRO_CACHE": str(cache)}


def _both(*argvs: list[str], env: dict[str, str]) -> list[tuple[int, dict[str, Any], str]]:
    """Start every command at once; (exit code, --json envelope, stderr) of each."""
    procs = [subprocess.Popen(a, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=900)
        out.append((p.returncode, json.loads(so) if so.strip() else {}, se))
    return out


def _check_model(project: Path, cache: Path, name: str) -> Path:
    """model.toml, pdm.lock and lock.toml parse; the one environment of the lock is complete and
    verifies file by file; no temporary build folder is left; the launcher is there. Its dir."""
    from pyrepro import verify
    from pyrepro.backends.local import env_key
    from pyrepro.registry import parse_model

    spec = parse_model(project / "models" / name / "model.toml")
    tomllib.loads((spec.dir / "pdm.lock").read_text())
    tomllib.loads((spec.dir / "lock.toml").read_text())
    env_dir = cache / "envs" / f"{name}-{env_key(spec)}"
    assert (env_dir / ".pyrepro-complete").is_file()
    verify.verify_env(env_dir, rebuild_hint="", use_index=False)
    leftovers = [p.name for p in (cache / "envs").iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers
    assert [p for p in (cache / "launchers").iterdir() if p.name.startswith(f"{name}-") and p.suffix == ".tmp"] == []
    return env_dir


@pytest.mark.integration
@pytest.mark.network
def test_build__two_at_once_on_one_cache__built_once_both_verified(repro_project: Path, isolated_cache: Path,
                                                                  write_files: Write) -> None:
    root = write_files(LIGHT)
    env = _env(repro_project, isolated_cache)
    first = subprocess.run([PYREPRO, "reproduce", str(root / "light"), "--json"], env=env, capture_output=True,
                           text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    for n in range(ROUNDS):
        subprocess.run([PYREPRO, "gc", "light"], env=env, check=True, capture_output=True, timeout=120)
        assert not any(p.name.startswith("light-") for p in (isolated_cache / "envs").iterdir())
        runs = _both([PYREPRO, "build", "light", "--json"], [PYREPRO, "build", "light", "--json"], env=env)
        assert all(code == 0 for code, _doc, _err in runs), [(c, e[-1500:]) for c, _d, e in runs]
        built = [doc["result"][0] if isinstance(doc["result"], list) else doc["result"] for _c, doc, _e in runs]
        assert len({b["env_dir"] for b in built}) == 1 and len({b["launcher"] for b in built}) == 1
        # they took turns: one built the environment, the other waited and found it complete
        assert sorted(b["env_cached"] for b in built) == [False, True], (n, built)
        env_dir = _check_model(repro_project, isolated_cache, "light")
        launched = subprocess.run([built[0]["launcher"], "--help"], capture_output=True, text=True, timeout=120)
        assert "True" in launched.stdout, launched  # run.py prints six.PY3
        assert Path(built[0]["env_dir"]) == env_dir


@pytest.mark.integration
@pytest.mark.network
def test_reproduce__two_at_once_on_one_model__both_pass_records_and_environment_intact(
        repro_project: Path, isolated_cache: Path, write_files: Write) -> None:
    """Every round relocks and rebuilds (the lock, its record and the environment are removed first),
    so both reproductions lock and build the same model at the same time."""
    root = write_files(LIGHT)
    env = _env(repro_project, isolated_cache)
    first = subprocess.run([PYREPRO, "reproduce", str(root / "light"), "--json"], env=env, capture_output=True,
                           text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    model = repro_project / "models" / "light"
    for _n in range(ROUNDS):
        for f in ("pdm.lock", "lock.toml"):
            (model / f).unlink()
        subprocess.run([PYREPRO, "gc", "light"], env=env, check=True, capture_output=True, timeout=120)
        cmd = [PYREPRO, "reproduce", str(root / "light"), "--json"]
        runs = _both(cmd, cmd, env=env)
        for code, doc, err in runs:
            assert code == 0 and doc["ok"], (code, err[-2000:], doc)
            rec = doc["result"]
            assert [(s["stage"], s["status"]) for s in rec["stages"]][:4] == [
                ("init", "ok"), ("lock", "ok"), ("build", "ok"), ("imports", "ok")]
            assert rec["imports"] == [{"module": "six", "status": "ok", "message": ""}]
        _check_model(repro_project, isolated_cache, "light")
        saved = json.loads((isolated_cache / "reproduce" / "light.json").read_text())
        assert saved["ok"] and saved["name"] == "light"


@pytest.mark.integration
@pytest.mark.network
def test_batch_workers__same_model_from_scratch_at_once__take_turns_both_pass(tmp_path: Path, repro_project: Path,
                                                                             isolated_cache: Path,
                                                                             write_files: Write) -> None:
    """Two batches (two batch folders) with the same submission under the same name, started at once
    on a project that has no models/light yet: their workers take turns on the model (the
    reproduce lock), so neither finds the other's half-made models/light/."""
    root = write_files(LIGHT)
    plans = []
    for k in range(2):
        plan = batch.Plan(f"r{k}", tmp_path / f"out{k}", (batch.Entry("light", root / "light"),), batch.Options(),
                          repro_project, isolated_cache)
        plan.write()
        plans.append(plan)
    procs = [subprocess.Popen([sys.executable, "-m", "pyrepro.engines.worker", "task", str(p.path), "0",
                               "--engine", "local"], env=p.worker_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for p in plans]
    logs = [p.communicate(timeout=900)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs
    results = [json.loads(p.task_file(0).read_text()) for p in plans]
    assert [r["status"] for r in results] == ["passed", "passed"], results
    assert sum("waiting for" in log for log in logs) == 1  # one of them waited for the other
    kept = [r["record"]["stages"][0]["detail"] for r in results]
    assert sum("already describes this folder" in d for d in kept) == 1, kept
    _check_model(repro_project, isolated_cache, "light")
