"""Local backend, runs, provenance, verdicts and the report, in a miniature world."""

from __future__ import annotations

import json
import os
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from pyrepro import data as data_mod
from pyrepro import report, run, verdict
from pyrepro.backends import local
from pyrepro.errors import ExternalToolError, NetworkError
from pyrepro.paths import Paths
from pyrepro.registry import load_registry
from tests.fakes import json_result

SC = Path(__file__).parent / "scenarios" / "backend"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def world(tmp_path: Path) -> Paths:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    (root / "flake.nix").write_text("{ }\n")
    return Paths(root=root, cache=tmp_path / "cache")


def test_locked_packages__markers__foreign_platform_dropped() -> None:
    pkgs = local.locked_packages(SC / "models" / "mini" / "pdm.lock", "3.11", "linux-x86_64")
    assert [(p.name, p.version, len(p.hashes)) for p in pkgs] == [("six", "1.17.0", 2)]
    win = local.locked_packages(SC / "models" / "mini" / "pdm.lock", "3.11", "windows-AMD64")
    assert {p.name for p in win} == {"six", "colorama"}
    assert local.requirements_text(pkgs).startswith("six==1.17.0 --hash=sha256:4721f391")


def test_env_key__lock_python_platform__all_matter(world: Paths) -> None:
    spec = load_registry(world.models).get("mini")
    k = local.env_key(spec, "linux-x86_64")
    assert k == local.env_key(spec, "linux-x86_64") != local.env_key(spec, "linux-aarch64")
    (spec.dir / "pdm.lock").write_text((spec.dir / "pdm.lock").read_text() + "\n")
    assert local.env_key(spec, "linux-x86_64") != k


def test_build_env__pip_fails__nothing_looks_complete(world: Paths) -> None:
    spec = load_registry(world.models).get("mini")

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        if "pip" in cmd:
            raise ExternalToolError(list(cmd), 1, "boom")
        from pyrepro import proc
        return proc.run(cmd, **kw)

    with pytest.raises(ExternalToolError):
        local.build_env(spec, world, runner=runner)
    envs = world.cache / "envs"
    assert not envs.exists() or list(envs.iterdir()) == []


def test_build_env__host_pip_constraint__never_applied_to_the_locked_install(world: Paths,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_registry(world.models).get("mini")
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/some-host-cap.txt")
    seen: list[dict[str, str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        if "pip" in cmd:
            seen.append(dict(kw.get("env") or {}))
            raise ExternalToolError(list(cmd), 1, "stop here")
        from pyrepro import proc
        return proc.run(cmd, **kw)

    with pytest.raises(ExternalToolError):
        local.build_env(spec, world, runner=runner)
    assert seen and seen[0]["PIP_CONSTRAINT"] == os.devnull


def _zip(path: Path, rows: str, name: str = "p.csv") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(name, rows)
    return path


def test_judge__tiers(tmp_path: Path) -> None:
    targets = {"a": 1.0, "b": 2.0}
    sub = _zip(tmp_path / "sub.zip", "id,prediction\na,1.5\nb,2.5\n")
    same = _zip(tmp_path / "same.zip", "id,prediction\na,1.5\nb,2.5\n")
    close = _zip(tmp_path / "close.zip", "id,prediction\na,1.50001\nb,2.5\n")
    far = _zip(tmp_path / "far.zip", "id,prediction\na,9\nb,2.5\n")
    short = _zip(tmp_path / "short.zip", "id,prediction\na,1\n")
    kw = {"benchmark": "x", "targets": targets, "submitted": sub, "reported_mae": 0.5}
    assert verdict.judge(exit_code=0, output=same, data_kind="jarvis", **kw).tier == "identical"
    v = verdict.judge(exit_code=0, output=close, data_kind="jarvis", **kw)
    assert v.tier == "agree" and v.max_relative_difference is not None and v.max_relative_difference < 1e-4
    v = verdict.judge(exit_code=0, output=far, data_kind="jarvis", **kw)
    assert v.tier == "differs" and v.mae == pytest.approx(4.25) and v.relative_mae_difference == pytest.approx(7.5)
    assert verdict.judge(exit_code=0, output=None, data_kind="jarvis", **kw).tier == "failed"
    assert verdict.judge(exit_code=0, output=short, data_kind="fixture", **kw).tier == "failed"
    assert verdict.judge(exit_code=1, output=same, data_kind="fixture", **kw).tier == "failed"
    assert verdict.judge(exit_code=0, output=same, data_kind="fixture", **kw).tier == "executable"
    nc = verdict.judge(exit_code=0, output=same, data_kind="jarvis", comparable=False, note="copy of ALIGNN",
                       benchmark="x", targets=targets, submitted=sub, reported_mae=0.5)
    assert nc.tier == "not-comparable" and "ALIGNN" in nc.reason and not nc.passed


def test_judge__ids_exactly_the_test_ids_and_test_mode_never_numerical(tmp_path: Path) -> None:
    targets = {"a": 1.0, "b": 2.0}
    sub = _zip(tmp_path / "sub.zip", "id,prediction\na,1.5\nb,2.5\n")
    dup = _zip(tmp_path / "dup.zip", "id,prediction\na,1.5\na,1.5\nb,2.5\n")
    extra = _zip(tmp_path / "extra.zip", "id,prediction\na,1.5\nb,2.5\nzz,3\n")
    kw = {"benchmark": "x", "targets": targets, "submitted": sub, "reported_mae": 0.5}
    d = verdict.judge(exit_code=0, output=dup, data_kind="fixture", **kw)
    assert d.tier == "failed" and "more than once" in d.reason
    e = verdict.judge(exit_code=0, output=extra, data_kind="fixture", **kw)
    assert e.tier == "failed" and "not test ids" in e.reason
    # a shortened (--test) run on the real data equals the submission here, and still gets no numerical verdict
    t = verdict.judge(exit_code=0, output=sub, data_kind="jarvis", test=True, **kw)
    assert t.tier == "executable" and "never compared" in t.reason


@pytest.mark.upstream
def test_prepare_data__jarvis_offline__clear_error_never_fixture(upstream: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(url: str, dest: Path) -> None:
        raise OSError("Name or service not known")

    monkeypatch.setattr(data_mod, "_urllib_download", offline)
    paths = Paths(root=REPO, cache=tmp_path / "cache")
    spec = load_registry(REPO / "models").get("cfid")
    with pytest.raises(NetworkError) as e:
        run.prepare_data("jarvis", paths, spec, mirror=upstream)
    assert "never falls back to fixture data" in (e.value.hint or "")
    assert "figshare" in str(e.value)


def test_static_seeds__calls_and_keywords(tmp_path: Path) -> None:
    p = tmp_path / "s.py"
    p.write_text("import random\nrandom.seed(123)\nnp.random.seed(0)\nf(random_state=0)\ntf.random.set_seed(7)\n")
    seeds = run.static_seeds(p)
    assert len(seeds) == 4 and "random.seed(123) at line 2" in seeds[0]
    p.write_text("SEED = 42\ndef load(a, val_ratio=0.1, split_seed=123, *, seed=None):\n    pass\nflag = True\n")
    assert sorted(run.static_seeds(p)) == ["SEED=42 at line 1", "split_seed=123 (default of load) at line 2"]


@pytest.mark.integration
def test_build_and_run__mini_world__executable_with_provenance(world: Paths, tmp_path: Path) -> None:
    spec = load_registry(world.models).get("mini")
    mirror = SC / "mirror"
    b1 = local.build(spec, world, mirror=mirror)
    assert not b1.env_cached and not b1.src_cached and b1.python.startswith("3.11")
    # the wheels went in with uv (a dependency of pyrepro), unpacked once into pyrepro's own cache
    import json
    assert json.loads((b1.env_dir / local.COMPLETE).read_text())["installer"] == "uv"
    assert any(local.uv_cache(world).iterdir())
    assert (b1.src_dir / "run.py").read_text().count("pyrepro_runtime") >= 2
    b2 = local.build(spec, world, mirror=mirror)
    assert b2.env_cached and b2.src_cached and (b2.env_key, b2.src_key) == (b1.env_key, b1.src_key)
    rec = run.run_model(spec, world, test=True, mirror=mirror, built=b2)
    assert rec.verdict is not None and rec.verdict.tier == "executable", rec.data
    d = rec.data
    assert d["exit_code"] == 0 and d["data"]["kind"] == "fixture" and d["data"]["digest"].startswith("sha256:")
    assert d["source"]["tree"] == spec.source.tree and d["lock"]["sha256"]
    assert d["patches"][0]["category"] == "cli" and d["environment"]["python"].startswith("3.11")
    assert list(d["outputs"]) == ["AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae.csv.zip"]
    stdout = (rec.record_path.parent / "logs" / "stdout.log").read_text()
    assert "source is read-only" in stdout and "six 1.17.0" in stdout
    # a patch change restages only the source
    p = world.patch_dir("mini") / "0001-uniform-cli.patch"
    p.write_text(p.read_text().replace("Effect: none: the same", "Effect: none: still the same"))
    from pyrepro import patches as patches_mod
    from pyrepro.errors import IntegrityError

    with pytest.raises(IntegrityError, match="changed since it was reviewed"):  # an unreviewed change
        local.build(spec, world, mirror=mirror)
    patches_mod.accept_series(world.patch_dir("mini"))
    b3 = local.build(spec, world, mirror=mirror)
    assert b3.env_cached and not b3.src_cached and b3.src_key != b1.src_key
    # gc keeps what the registry references, drops the old staged source
    (world.cache / "envs" / ".home").mkdir()  # helper home: hidden, kept
    fresh_tmp = world.cache / "envs" / ".mini-abc.x1y2"  # a build in progress: kept
    stale_tmp = world.cache / "envs" / ".mini-abc.z3w4"  # an interrupted build a day ago: removed
    fresh_tmp.mkdir()
    stale_tmp.mkdir()
    os.utime(stale_tmp, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    removed = local.gc(world, [spec])
    assert sorted(r.name for r in removed) == sorted([f"mini-{b1.src_key}", ".mini-abc.z3w4",
                                                      f"mini-{b1.env_key[:10]}-{b1.src_key[:10]}"])
    assert b3.launcher.exists() and b3.env_dir.is_dir() and b3.src_dir.is_dir() and fresh_tmp.is_dir()
    assert local.gc(world, [spec]) == []
    # the report reads the committed summary, refreshed from the cache's records
    reg = load_registry(world.models)
    assert "| mini | " in report.render_markdown(report.build_report(reg, world))
    assert "not run" in report.render_markdown(report.build_report(reg, world))
    assert report.refresh_summaries(reg, world) == [spec.dir / "last-run.json"]
    assert report.refresh_summaries(reg, world) == []  # unchanged: not rewritten
    summary_text = (spec.dir / "last-run.json").read_text()
    assert str(tmp_path) not in summary_text and str(world.cache) not in summary_text
    summary = json.loads(summary_text)
    s_run = summary["runs"]["dft_3d_exfoliation_energy/fixture"]
    assert s_run["exit_code"] == 0 and s_run["verdict"]["tier"] == "executable" and "command" not in s_run
    assert s_run["lock"]["sha256"] == d["lock"]["sha256"] and s_run["outputs"] == d["outputs"]
    rep = report.build_report(reg, world)
    md = report.render_markdown(rep)
    assert "| mini |" in md and "executable" in md and "unverified" in md
    json.dumps(rep)
    # another machine without a cache renders the same from the committed summary
    rep2 = report.build_report(reg, Paths(root=world.root, cache=tmp_path / "empty-cache"))
    assert rep2["models"] == rep["models"]


def test_run_cli__unknown_target__not_found_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro.cli import main

    assert main(["run", "no_such_model", "--test"]) == 4
    assert "unknown model" in capsys.readouterr().err


def test_select__exfoliation_only_exclude__subset() -> None:
    reg = load_registry(REPO / "models")
    bench, specs = run.select(reg, "exfoliation", only=["cfid", "matminer_rf"], exclude=["matminer_rf"])
    assert bench == "dft_3d_exfoliation_energy" and [s.name for s in specs] == ["cfid"]
    bench, specs = run.select(reg, "exfoliation")
    assert len(specs) == 14 and "elemnet" not in [s.name for s in specs]


def test_build__pyproject_edited_without_relock__refused_exit_5(world: Paths, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.cli import main

    spec = load_registry(world.models).get("mini")
    (spec.dir / "pyproject.toml").write_text('[project]\nname = "m"\nversion = "0"\nrequires-python = "==3.11.*"\n'
                                             'dependencies = ["six", "requests"]\n')
    lock_before = (spec.dir / "pdm.lock").read_bytes()
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    assert main(["build", "mini"]) == 5
    err = capsys.readouterr().err
    assert "pdm.lock" in err and "stale" in err and "pyrepro lock mini" in err
    assert (spec.dir / "pdm.lock").read_bytes() == lock_before
    assert not (world.cache / "envs").exists() or not list((world.cache / "envs").iterdir())


def test_run_cli__one_model_integrity_error__exit_5_with_hint(world: Paths, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.cli import main

    spec = load_registry(world.models).get("mini")
    (spec.dir / "pyproject.toml").write_text('[project]\nname = "m"\nversion = "0"\nrequires-python = "==3.11.*"\n'
                                             'dependencies = ["six", "requests"]\n')
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    assert main(["run", "mini", "--test"]) == 5  # not 12: the build refused a stale lock
    assert "hint: relock with: pyrepro lock mini" in capsys.readouterr().err


def test_run_cli__tampered_staged_source_or_env__exit_5_names_file_and_build_repairs(
        world: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro import sources
    from pyrepro.cli import main

    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    mirror = str(SC / "mirror")
    assert main(["build", "mini", "--mirror", mirror]) == 0
    spec = load_registry(world.models).get("mini")
    b = local.build(spec, world, mirror=SC / "mirror")
    # 1. a line added to the staged source
    script = b.src_dir / "run.py"
    sources.make_writable(script)
    script.write_text(script.read_text() + "\nprint('tampered')\n")
    capsys.readouterr()
    assert main(["run", "mini", "--test", "--mirror", mirror]) == 5
    err = capsys.readouterr().err
    assert str(script) in err and "changed since the source was made" in err and "pyrepro build mini" in err
    assert main(["build", "mini", "--mirror", mirror]) == 0  # replaces the tampered tree
    assert "tampered" not in script.read_text()
    # 2. a module inside the environment
    six = next((b.env_dir / "lib").glob("python*/site-packages/six.py"))
    six.chmod(0o644)
    six.write_text(six.read_text() + "\nTAMPERED = 1\n")
    capsys.readouterr()
    assert main(["run", "mini", "--test", "--mirror", mirror]) == 5
    err = capsys.readouterr().err
    assert "six.py" in err and "changed since the environment was made" in err
    assert main(["build", "mini", "--mirror", mirror]) == 0
    assert "TAMPERED" not in next((b.env_dir / "lib").glob("python*/site-packages/six.py")).read_text()
    capsys.readouterr()
    assert main(["run", "mini", "--test", "--mirror", mirror, "--json"]) == 0
    rec = json_result(capsys.readouterr().out)[0]
    assert [v["what"] for v in rec["verified"]] == ["source", "environment"] and rec["verified"][1]["files"] > 0
    assert rec["pyrepro"]["version"] and "commit" in rec["pyrepro"]
    assert len(rec["predictions"]["csv_sha256"]) == 64 and rec["predictions"]["rows"] > 0
    assert main(["run", "mini", "--test", "--mirror", mirror]) == 0
    assert "mini: record " in capsys.readouterr().out


def test_patch_cli__edited_plus_line__refused_until_accepted(world: Paths, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.cli import main

    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    mirror = str(SC / "mirror")
    p = world.patch_dir("mini") / "0001-uniform-cli.patch"
    text = p.read_text()
    plus = next(ln for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    p.write_text(text.replace(plus, plus + "  # sneaked in", 1))
    assert main(["build", "mini", "--mirror", mirror]) == 5
    err = capsys.readouterr().err
    assert "0001-uniform-cli.patch" in err and "pyrepro patch accept mini" in err
    assert main(["patch", "check", "mini", "--mirror", mirror]) == 5
    assert main(["patch", "accept", "mini"]) == 0
    assert "changed 0001-uniform-cli.patch" in capsys.readouterr().out
    assert main(["build", "mini", "--mirror", mirror]) == 0


def test_judge__submitted_file_for_other_ids__not_comparable_says_why(tmp_path: Path) -> None:
    targets = {"a": 1.0, "b": 2.0}
    other = _zip(tmp_path / "other.zip", "id,prediction\na,1.5\nc,2.5\n")
    run_out = _zip(tmp_path / "run.zip", "id,prediction\na,1.5\nb,2.5\n")
    v = verdict.judge(exit_code=0, output=run_out, data_kind="jarvis", benchmark="x", targets=targets,
                      submitted=other, reported_mae=0.5)
    assert v.tier == "not-comparable" and "1 not in the test set, 1 test ids missing" in v.reason


def test_build_env__sigterm_mid_install__nothing_half_built_left(world: Paths) -> None:
    import signal

    from pyrepro.cli import _terminate_cleanly

    spec = load_registry(world.models).get("mini")
    previous = signal.getsignal(signal.SIGTERM)
    _terminate_cleanly()  # what `pyrepro ...` installs first

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        if "pip" in cmd:
            os.kill(os.getpid(), signal.SIGTERM)  # a scheduler stops the job mid-install
        from pyrepro import proc
        return proc.run(cmd, **kw)

    try:
        with pytest.raises(KeyboardInterrupt):
            local.build_env(spec, world, runner=runner)
    finally:
        signal.signal(signal.SIGTERM, previous)
    envs = world.cache / "envs"
    assert not envs.exists() or [p.name for p in envs.iterdir() if not p.name.startswith(".home")] == []


def test_graph__built_model__sizes_from_the_installed_environment(world: Paths) -> None:
    from pyrepro import graph as gmod

    spec = load_registry(world.models).get("mini")
    before = gmod.load_graph("mini", root=world.root, cache=world.cache)
    assert before.node("six").size is None  # nothing built yet: no sizes, still a graph
    local.build(spec, world, mirror=SC / "mirror")
    dg = gmod.load_graph("mini", root=world.root, cache=world.cache)
    assert dg.node("six").size and dg.node("six").size > 1000
    assert "KiB" in gmod.to_dot(gmod.summarize(dg)) or "MiB" in gmod.to_dot(gmod.summarize(dg))


def test_comparability__same_predictions_in_differently_zipped_files__twins_not_comparable(tmp_path: Path) -> None:
    """Evidence beats the flag: two models whose submitted files hold the same predictions (cgcnn's
    is ALIGNN's, in a zip of its own) are no reference for either; the reviewer's flag and note
    decide only when no twin exists."""
    import time
    import zipfile

    a = _zip(tmp_path / "a.zip", "id,prediction\nx,1.5\ny,2.25\n")
    time.sleep(1.1)  # another zip timestamp: other bytes, same table
    b = tmp_path / "b.zip"
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("renamed.csv", "id,prediction\ny,2.25\nx,1.5\n")
    c = _zip(tmp_path / "c.zip", "id,prediction\nx,1.5\ny,2.5\n")
    assert a.read_bytes() != b.read_bytes()
    da, db, dc = (verdict.predictions_digest(p) for p in (a, b, c))
    assert da == db != dc and verdict.predictions_digest(tmp_path / "missing.zip") is None
    ok, why = verdict.comparability(reviewed=True, note="", digest=da, others={"bee": db, "see": dc})
    assert not ok and "identical, value for value, to bee's" in why
    assert verdict.comparability(reviewed=True, note="n", digest=dc, others={"a": da, "b": db}) == (True, "n")
    assert verdict.comparability(reviewed=False, note="why not", digest=dc, others={}) == (False, "why not")
    # and the verdict carries the reason
    targets = {"x": 1.0, "y": 2.0}
    v = verdict.judge(exit_code=0, output=c, data_kind="jarvis", benchmark="x", targets=targets, submitted=a,
                      reported_mae=0.4, comparable=ok, note=why)
    assert v.tier == "not-comparable" and "bee's" in v.reason


def test_gc_cli__named_model__its_referenced_environment_removed_on_request(
        world: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: 'pyrepro gc' can remove any environment on request, not only unreferenced ones."""
    from pyrepro.cli import main

    spec = load_registry(world.models).get("mini")
    ek = local.env_key(spec)
    env = world.cache / "envs" / f"mini-{ek}"
    other = world.cache / "envs" / "gone-0123456789abcdef0123"  # of no registry model
    for d in (env, other):
        (d / "bin").mkdir(parents=True)
        (d / "bin" / "python").write_text("")
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    assert main(["gc"]) == 0  # without names: only what nothing references
    assert env.is_dir() and not other.exists()
    capsys.readouterr()
    assert main(["gc", "mini", "--dry-run"]) == 0
    assert f"would remove {env}" in capsys.readouterr().out and env.is_dir()
    assert main(["gc", "mini"]) == 0
    assert not env.exists() and "removed" in capsys.readouterr().out
    assert main(["gc", "nosuchmodel"]) == 4
    assert "nosuchmodel" in capsys.readouterr().err
    (env / "bin").mkdir(parents=True)
    assert main(["gc", "--all"]) == 0 and not env.exists()


def test_check_imports_cli__zero_modules__a_failure_not_a_pass(world: Paths, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.backends import BuiltModel
    from pyrepro.cli import main

    fake = BuiltModel("mini", "local", world.cache / "env", "k" * 20, world.cache / "src", world.cache / "rt",
                      "s" * 20, world.cache / "launch", "3.11.9", True, True, 0.1)
    monkeypatch.setattr(local, "build", lambda spec, paths, **kw: fake)
    monkeypatch.setattr(run, "check_imports", lambda spec, built, **kw: [])
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    assert main(["check-imports", "mini"]) == 11
    assert "no module to import" in capsys.readouterr().err
    monkeypatch.setattr(run, "check_imports", lambda spec, built, **kw: [("six", "ok", "")])
    assert main(["check-imports", "mini"]) == 0


def test_gc__named__removes_only_that_model(world: Paths) -> None:
    """Naming a model removes its entries and nothing else: not another model's unreferenced
    environment (a cache shared by two projects keeps the other project's environments)."""
    for n in ("mini-aaaa", "other-bbbb", "minimal-cccc"):
        (world.cache / "envs" / n).mkdir(parents=True)
    spec = load_registry(world.models).get("mini")
    removed = local.gc(world, [spec], remove=("mini",))
    assert [p.name for p in removed] == ["mini-aaaa"]
    assert (world.cache / "envs" / "other-bbbb").is_dir() and (world.cache / "envs" / "minimal-cccc").is_dir()


def test_gc__download_store__keeps_files_a_lock_names_and_fresh_ones(world: Paths) -> None:
    """The download store (files pip fetched for any lock) loses a file no registry lock names,
    once it is a day old (a build of a lock not registered yet may be fetching it now); --all
    empties it; naming a model leaves it alone."""
    import os
    import time

    store = local.download_store(world)
    store.mkdir(parents=True)
    named = store / "six-1.17.0-py2.py3-none-any.whl"
    stale, fresh = store / "torch-1.0-cp39-none-any.whl", store / "numpy-2.0-cp311-none-any.whl"
    for f in (named, stale, fresh):
        f.write_bytes(b"x")
    old = time.time() - 2 * local.STALE_TMP_SECONDS
    for f in (named, stale):
        os.utime(f, (old, old))
    specs = list(load_registry(world.models))
    assert local.gc(world, specs, remove=("mini",)) == [] and stale.exists()
    assert local.gc(world, specs) == [stale]
    assert named.exists() and fresh.exists() and not stale.exists()
    assert sorted(p.name for p in local.gc(world, specs, everything=True)) == sorted([named.name, fresh.name])
