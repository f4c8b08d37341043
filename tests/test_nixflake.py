"""The real flake.lock and the busybox test flake (tests/nixflake), run offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyrepro import proc
from tests.conftest import have, nix_env
from tests.test_nixeval import MODEL

needs_nix = pytest.mark.skipif(not have("nix"), reason="nix is not installed")
APPLETS = ["sh", "mktemp", "cp", "chmod", "mkdir", "grep", "touch", "printf", "cat", "echo", "sed", "awk", "find",
           "head", "ln", "tr", "ls", "test", "[", "env", "readlink", "dirname", "basename", "rm", "sort", "uniq"]


def _git_repo(d: Path) -> None:
    proc.run(["git", "init", "-q"], cwd=d)
    proc.run(["git", "add", "-A"], cwd=d)


@needs_nix
def test_flake_metadata__repo_lock__shows_pinned_revs(repo_root: Path, tmp_path: Path) -> None:
    d = tmp_path / "flake"
    d.mkdir()
    for f in ("flake.nix", "flake.lock"):
        shutil.copy(repo_root / f, d / f)
    shutil.copytree(repo_root / "nix", d / "nix")
    _git_repo(d)
    out = proc.run(["nix", "flake", "metadata", "--json", str(d)], env=nix_env()).stdout
    nodes = json.loads(out)["locks"]["nodes"]
    assert nodes["dream2nix"]["locked"]["rev"] == "69eb01fa0995e1e90add49d8ca5bcba213b0416f"
    assert nodes["nixpkgs"]["locked"]["rev"] == "5395fb3ab3f97b9b7abca147249fa2e8ed27b192"
    assert nodes["root"]["inputs"]["nixpkgs"] == ["dream2nix", "nixpkgs"]


@pytest.fixture
def test_flake(repo_root: Path, tmp_path: Path) -> Path:
    if not Path("/bin/busybox").exists():
        pytest.skip("static busybox is not installed")
    d = tmp_path / "tf"
    shutil.copytree(repo_root / "tests" / "nixflake", d)
    shutil.copytree(repo_root / "nix", d / "nix")
    (d / "pyrepro" / "data").mkdir(parents=True)
    shutil.copy(repo_root / "pyrepro" / "data" / "gpu-wrapper.sh", d / "pyrepro" / "data" / "gpu-wrapper.sh")
    bb = d / "busybox" / "bin"
    bb.mkdir(parents=True)
    shutil.copy("/bin/busybox", bb / "busybox")
    for a in APPLETS:
        (bb / a).symlink_to("busybox")
    for name, up, bench, gpu in [("alpha", "Alpha_1", "dft_3d_exfoliation_energy", "none"),
                                 ("beta", "Beta_2", "dft_3d_exfoliation_energy", "optional"),
                                 ("gamma", "Gamma", "other", "none")]:
        (d / "models" / name).mkdir(parents=True)
        (d / "models" / name / "model.toml").write_text(
            MODEL.format(name=name, upstream=up, gpu=gpu, commit="a" * 40, tree="b" * 40)
            .replace('"dft_3d_exfoliation_energy"', f'"{bench}"'))
    _git_repo(d)
    return d


def _nix(args: list[str], d: Path, extra: dict[str, str] | None = None) -> proc.Completed:
    env = {**nix_env(), **(extra or {})}
    env.pop("PYREPRO_CACHE", None)
    env["PATH"] = f"{d / 'busybox' / 'bin'}:{env['PATH']}"
    return proc.run(["nix", *args], cwd=d, env=env, check=False, timeout=600)


@needs_nix
@pytest.mark.integration
def test_test_flake__build_run_check_eval__work_offline(test_flake: Path, tmp_path: Path) -> None:
    d = test_flake
    b = _nix(["build", "--no-link", "--json", ".#models.alpha"], d)
    assert b.returncode == 0, b.stderr
    out = Path(json.loads(b.stdout)[0]["outputs"]["out"])
    assert (out / "bin" / "alpha").exists()
    caller = tmp_path / "caller"
    caller.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = _nix(["run", f"{d}#exfoliation", "--", "--test"], caller,
             {"XDG_CACHE_HOME": str(caller.parent / "xdg"), "TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    runs = r.stdout.split("exfoliation:")[0]
    assert "== alpha" in runs and "== beta" in runs and "gamma" not in runs
    assert "ok: alpha beta" in r.stdout
    # every model got --test and --benchmark, ran in a fresh work dir with HOME inside it (removed
    # at exit), wrote its predictions to <cache>/runs/exfoliation/<time>/<name>/ (never the
    # caller's directory, often the checkout), and nothing into the source, store or data folder
    for line in (ln for ln in r.stdout.splitlines() if ln.startswith("run in ")):
        assert "test=1" in line and "/pyrepro-" in line.split(" test=")[0]
        work = line.split()[2]
        assert f"home={work}/home" in line
        assert f"data={caller.parent / 'xdg' / 'pyrepro' / 'data' / 'jarvis'} " in line
    [base] = (caller.parent / "xdg" / "pyrepro" / "runs" / "exfoliation").iterdir()
    assert (base / "alpha" / "prediction.csv.zip").is_file()
    assert (base / "beta" / "prediction.csv.zip").is_file()
    assert f"(predictions under {base})" in r.stdout
    assert list(caller.iterdir()) == [] and list(tmp.iterdir()) == []  # work dirs removed
    assert not (caller.parent / "xdg" / "pyrepro" / "data").exists()  # data is only read
    # every model goes through nix/gpu.nix: CPU, with the reason said (one policy with the local backend)
    assert "gpu=optional" in r.stdout and "gpu=none" in r.stdout
    assert "CPU run (model needs no GPU)" in r.stderr
    assert "pyrepro-gpu" in r.stderr  # the wrapper said what it found (no driver here: CPU)
    assert not (out / "written-here").exists()
    assert not (d / "fixture-src" / "written-here").exists()
    c = _nix(["flake", "check"], d)
    assert c.returncode == 0, c.stderr
    e = _nix(["eval", "--json", ".#legacyPackages.x86_64-linux.models", "--apply", "builtins.attrNames"], d)
    assert json.loads(e.stdout) == ["alpha", "beta", "gamma"]


@needs_nix
@pytest.mark.integration
def test_test_flake__failing_model__app_reports_it_and_fails(test_flake: Path) -> None:
    run_py = test_flake / "fixture-src" / "run.py"
    run_py.write_text("echo broken; exit 3\n")
    proc.run(["git", "add", "-A"], cwd=test_flake)
    r = _nix(["run", ".#exfoliation", "--", "--test"], test_flake)
    assert r.returncode != 0
    assert "failed: alpha beta" in r.stdout


@needs_nix
def test_nar_hash__fixture_tree__equals_nix_hash_path(tmp_path: Path) -> None:
    from pyrepro.sources import nar_hash
    t = tmp_path / "t"
    (t / "sub").mkdir(parents=True)
    (t / "a.txt").write_text("x\n")
    (t / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (t / "sub" / "run.sh").chmod(0o755)
    (t / "link").symlink_to("a.txt")
    nix = proc.run(["nix", "hash", "path", str(t)], env=nix_env()).stdout.strip()
    b32 = proc.run(["nix-hash", "--type", "sha256", "--base32", str(t)], env=nix_env()).stdout.strip()
    assert nar_hash(t).sri == nix
    assert nar_hash(t).base32 == b32
