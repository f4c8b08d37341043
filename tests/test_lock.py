"""Locking: relaxation rules on recorded resolver messages, the strategy order with a fake pdm,
atomic writes, categories, offline --check, and (integration) a real small lock."""

from __future__ import annotations

import datetime as dt
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pyrepro import lock, proc, relax
from pyrepro.errors import NetworkError
from pyrepro.proc import Completed
from pyrepro.registry import load_registry
from tests.fakes import FakeRunner, answer_uv_compile, json_result

MSG = Path(__file__).parent / "data" / "resolver_messages"
REPO = Path(__file__).resolve().parent.parent


def _step(message: str, reqs: tuple[str, ...], versions: dict[str, tuple[str, ...]] | None = None) -> relax.Step | None:
    return relax.relax(message, reqs, relax.Facts(versions or {}))


def test_relax__pip_matbench_missing_version__nearest_release() -> None:
    s = _step((MSG / "pip" / "matbench__0_1_0.txt").read_text(), ("matbench==0.1.0", "numpy"),
              {"matbench": relax.pip_versions((MSG / "pip" / "matbench__0_1_0.txt").read_text())})
    assert s is not None and (s.rule, s.before, s.after) == ("nearest-release", "matbench==0.1.0", "matbench==0.2")
    assert s.requirements == ("matbench==0.2", "numpy")


def test_relax__modnet_0_1_10__nearest_existing_release() -> None:
    p = relax.Problem("not-found", "modnet", ("modnet==0.1.10",))
    s = relax.relax([p], ("modnet==0.1.10",), relax.Facts({"modnet": ("0.1.8", "0.1.9", "0.1.11", "0.2.1")}))
    assert s is not None and s.after in ("modnet==0.1.9", "modnet==0.1.11")


def test_relax__pdm_unknown_sko__renamed_to_scikit_opt() -> None:
    s = _step((MSG / "pdm" / "unknown.txt").read_text(), ("sko==0.6.6",), {"sko": ()})
    assert s is not None and (s.rule, s.after) == ("rename", "scikit-opt==0.6.6")


@pytest.mark.parametrize("name", ["pip/torch__1_12_1_cu113.txt", "pdm/local_version.txt"])
def test_relax__local_version_label__stripped(name: str) -> None:
    s = _step((MSG / name).read_text(), ("torch==1.12.1+cu113",), {"torch": ("1.12.1", "2.0.0")})
    assert s is not None and (s.rule, s.after) == ("strip-local-version", "torch==1.12.1")


@pytest.mark.parametrize("name", ["pdm/conflict.txt", "pip/requests__2_31_0_urllib3__1_20.txt"])
def test_relax__conflict__narrowest_pin_widened(name: str) -> None:
    s = _step((MSG / name).read_text(), ("requests==2.31.0", "urllib3==1.20"))
    assert s is not None and s.rule == "widen-conflict" and s.before == "urllib3==1.20"
    assert s.after == "" or relax.satisfies(s.after.removeprefix("urllib3"), "1.26.18")


def test_relax__duplicate_pins__one_dropped() -> None:
    s = _step((MSG / "pdm" / "dup_pins.txt").read_text(), ("scikit-learn==1.0.2", "scikit-learn==1.1.0", "numpy"))
    assert s is not None and s.rule == "widen-conflict" and len(s.requirements) == 2


def test_relax__conda_name__renamed() -> None:
    p = relax.Problem("not-found", "py-xgboost-gpu", ("py-xgboost-gpu",))
    s = relax.relax([p], ("py-xgboost-gpu",), relax.Facts({"py-xgboost-gpu": ()}))
    assert s is not None and s.after == "xgboost"


def test_relax__unknown_message__no_step() -> None:
    assert _step("ERROR: the moon is in the wrong phase", ("a",)) is None


def _project(tmp: Path, deps: list[str]) -> Path:
    d = tmp / "proj"
    d.mkdir()
    body = "".join(f'    "{x}",\n' for x in deps)
    (d / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "0"\nrequires-python = "==3.10.*"\n'
                                      f'dependencies = [\n{body}]\n\n[tool.pdm]\ndistribution = false\n')
    return d


GOOD_LOCK = textwrap.dedent("""\
    [metadata]
    groups = ["default"]
    strategy = ["inherit_metadata"]
    lock_version = "4.5.0"
    content_hash = "sha256:{h}"

    [[package]]
    name = "six"
    version = "1.17.0"
    files = [
        {{file = "six-1.17.0-py2.py3-none-any.whl", hash = "sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"}},
    ]
    """)


def _fake_pdm(fail_times: int, message: str) -> tuple[FakeRunner, list[list[str]]]:
    seen: list[list[str]] = []
    state = {"n": 0}

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        seen.append(list(argv))
        if "--append" in argv:
            return Completed(tuple(argv), 0, "", "")
        state["n"] += 1
        if state["n"] <= fail_times:
            return Completed(tuple(argv), 1, "", message)
        proj = Path(argv[argv.index("-p") + 1])
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    r = FakeRunner()
    r.on(lock.pdm_command(), pdm)
    answer_uv_compile(r)
    return r, seen


def test_lock_request__dated__the_lock_starts_under_the_date_bound(tmp_path: Path) -> None:
    """Issue 42: where the submission's date is known, the date bound is hard: the first attempt is
    bounded (no unbounded attempt of the newest releases); undated, the first is as declared."""
    d = _project(tmp_path, ["six"])
    runner, _ = _fake_pdm(0, "")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14)), runner=runner,
                            python_exe=Path("/usr/bin/python3"))
    assert out.ok and out.strategy == "date-bounded" and [a.strategy for a in out.attempts] == ["date-bounded"]
    assert [a.exclude_newer for a in out.attempts] == ["2023-01-15"]
    undated = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_fake_pdm(0, "")[0],
                                python_exe=Path("/usr/bin/python3"))
    assert undated.strategy == "as-declared"


def test_lock_request__fails_then_date_bound_works__category_2(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    runner, seen = _fake_pdm(1, "ERROR: Unable to find a resolution for six\n")
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), start="as-declared")
    assert out.category == 2 and out.strategy == "date-bounded"
    assert [a.strategy for a in out.attempts] == ["as-declared", "date-bounded"]
    assert "--exclude-newer" in seen[-2] and "2023-01-15" in " ".join(seen[-2])  # the day after submission, exclusive
    assert (d / "pdm.lock").is_file() and "category = 2" in (d / "lock.toml").read_text()
    assert lock.check_lock_dir(d) == []
    assert "--exclude-newer-override" not in seen[-2]  # 2023 admits setuptools 40.8.0


def test_lock_request__model_toml_carries_earlier_relaxations__never_category_1(tmp_path: Path) -> None:
    """A relock after a repair (jax moved to 0.4.13 in lockstep with the jaxlib that
    nearest-release took) succeeds as declared, but what it declares is pyrepro's, not the
    submission's: category 2, and the record says what was carried."""
    d = _project(tmp_path, ["six"])
    runner, _seen = _fake_pdm(0, "")
    carried = ("jaxlib==0.4.13", "rdkit-pypi dropped")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10", carried=carried), runner=runner,
                            python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and out.strategy == "as-declared"
    assert any("jaxlib==0.4.13, rdkit-pypi dropped" in f for f in out.fidelity)
    plain = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_fake_pdm(0, "")[0],
                              python_exe=Path("/usr/bin/python3"))
    assert plain.category == 1


def test_lock_request__relock_prefers_the_replaced_locks_versions__never_under_a_date_bound(tmp_path: Path) -> None:
    """A relock after a repair move gives pdm the lock it replaces (``--update-reuse``, the lock in
    pdm's working folder): its versions, dependencies and hashes need no index reads. A date-bounded
    attempt gets neither, since a kept version may be newer than the bound."""
    d = _project(tmp_path, ["six"])
    previous = GOOD_LOCK.format(h="0" * 64)
    runner, seen = _fake_pdm(1, "ERROR: Unable to find a resolution for six\n")
    answer = runner.responses[0][1]
    found: list[str | None] = []  # the pdm.lock in pdm's folder when each first pass starts

    def spy(argv, cwd, env):  # type: ignore[no-untyped-def]
        f = Path(argv[argv.index("-p") + 1]) / "pdm.lock"
        if "--append" not in argv:
            found.append(f.read_text() if f.is_file() else None)
        return answer(argv, cwd, env)

    runner.responses[0] = (runner.responses[0][0], spy)
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), prefer=previous,
                            start="as-declared")
    firsts = [a for a in seen if "--append" not in a]
    assert "--update-reuse" in firsts[0] and found[0] == previous  # as declared: the previous lock preferred
    assert "--exclude-newer" in firsts[1] and "--update-reuse" not in firsts[1] and found[1] is None
    assert out.strategy == "date-bounded" and not any(lock.PREFERRED in f for f in out.fidelity)
    again = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_fake_pdm(0, "")[0],
                              python_exe=Path("/usr/bin/python3"), prefer=previous)
    assert again.ok and any(lock.PREFERRED in f for f in again.fidelity)
    plain = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_fake_pdm(0, "")[0],
                              python_exe=Path("/usr/bin/python3"))
    assert not any(lock.PREFERRED in f for f in plain.fidelity)


def test_lock_request__bound_before_2019_02__setuptools_bounded_by_its_legacy_floor(tmp_path: Path) -> None:
    # phoenics-2018: dated 2018-01-22, no setuptools>=40.8.0 (pip's build requirement for a legacy
    # sdist) existed, so pdm could not build seaborn 0.8.1's sdist for its metadata
    d = _project(tmp_path, ["seaborn==0.8.1"])
    runner, seen = _fake_pdm(1, "ERROR: Unable to find a resolution for seaborn\n")
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2018, 1, 22))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), start="as-declared")
    assert out.category == 2 and out.strategy == "date-bounded"
    bounded = seen[-2]
    assert bounded[bounded.index("--exclude-newer") + 1] == "2018-01-23"
    assert bounded[bounded.index("--exclude-newer-override") + 1] == "setuptools=2019-02-06"
    assert "--exclude-newer-override" not in seen[0]  # the as-declared attempt has no bound at all


def test_lock_request__relaxation_runs_out__category_4_previous_lock_kept(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    (d / "pdm.lock").write_text("previous lock\n")
    runner, _ = _fake_pdm(99, "ERROR: the moon is in the wrong phase\n")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 4 and (d / "pdm.lock").read_text() == "previous lock\n"
    assert "category = 4" in (d / "lock.toml").read_text()


def test_lock_request__index_unreachable__network_error_names_index(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    msg = ("ERROR: Failed to connect to https://pypi.org/simple/six/: "
           "[Errno -3] Temporary failure in name resolution\n")
    runner, _ = _fake_pdm(99, msg)
    with pytest.raises(NetworkError) as e:
        lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert "pypi.org" in str(e.value)
    assert not (d / "pdm.lock").exists()


def test_check_lock_dir__drift_and_missing_hash__reported(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    h = lock.content_hash(lock.read_pyproject(d / "pyproject.toml")).removeprefix("sha256:")
    (d / "pdm.lock").write_text(GOOD_LOCK.format(h=h))
    assert lock.check_lock_dir(d) == []
    (d / "pyproject.toml").write_text((d / "pyproject.toml").read_text().replace('"six"', '"six", "tomli"'))
    assert any("content hash" in p.message or "hash" in p.message for p in lock.check_lock_dir(d))
    (d / "pyproject.toml").write_text((d / "pyproject.toml").read_text().replace('"six", "tomli"', '"six"'))
    (d / "pdm.lock").write_text(GOOD_LOCK.format(h=h).replace('{file = "six', '{url = "https://x/six'))
    assert lock.check_lock_dir(d)


def test_check_lock__committed_locks__match_their_pyprojects() -> None:
    reg = load_registry(REPO / "models")
    locked = [s for s in reg if (s.dir / "pdm.lock").is_file()]
    assert len(locked) >= 8
    for s in locked:
        assert lock.check_lock(s) == [], s.name


@pytest.mark.integration
@pytest.mark.network
def test_lock_request__real_pdm_small_project__hash_checked_lock(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), aarch64=False, timeout=300)
    assert out.category == 1 and out.strategy == "as-declared"
    text = (d / "pdm.lock").read_text()
    assert 'name = "six"' in text and "hash = \"sha256:" in text and "url =" not in text
    assert lock.check_lock_dir(d) == []
    shutil.rmtree(d)


def test_lock_request__pinned_release_after_submission__date_bound_moved_category_2(tmp_path: Path) -> None:
    # kgcnn_cogn: submitted 2023-05-07, but kgcnn==3.0.1 (reviewed pin) was uploaded 2023-05-22;
    # the unbounded resolution times out, the bounded one cannot see the pin at all.
    d = _project(tmp_path, ["kgcnn==3.0.1"])
    seen: list[list[str]] = []

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        seen.append(list(argv))
        if "--append" in argv:
            return Completed(tuple(argv), 0, "", "")
        bound = argv[argv.index("--exclude-newer") + 1] if "--exclude-newer" in argv else None
        if bound is None or bound < "2023-05-23":
            return Completed(tuple(argv), 1, "", "ERROR: Unable to find a resolution for kgcnn\n"
                                                 "Please make sure the package name is correct.\n")
        proj = Path(argv[argv.index("-p") + 1])
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on([lock.sys.executable, "-c"], "2023-05-22\n")
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 5, 7))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), start="date-bounded")
    assert out.category == 2 and out.strategy == "relaxed" and out.steps == ()
    assert [(a.strategy, a.exclude_newer, a.ok) for a in out.attempts] == [
        ("date-bounded", "2023-05-08", False), ("relaxed", "2023-05-23", True)]
    assert out.exclude_newer == "2023-05-23"
    assert any("2023-05-08 -> 2023-05-23" in f and "kgcnn==3.0.1" in f for f in out.fidelity)
    record = (d / "lock.toml").read_text()
    assert 'exclude_newer = "2023-05-23"' in record and "released 2023-05-22" in record
    assert lock.check_lock_dir(d) == []


def test_lock_request__pin_released_before_bound__bound_not_moved_category_4(tmp_path: Path) -> None:
    d = _project(tmp_path, ["kgcnn==3.0.1"])
    runner, _ = _fake_pdm(99, "ERROR: Unable to find a resolution for kgcnn\n")
    runner.on([lock.sys.executable, "-c"], "2023-01-02\n")  # older than the bound: not the bound's fault
    runner.on([lock.sys.executable, "-m", "pip", "index"], "kgcnn (3.0.1)\nAvailable versions: 3.0.1, 3.0.0\n")
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 5, 7))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), start="date-bounded")
    assert out.category == 4 and not (d / "pdm.lock").exists()
    assert all(a.exclude_newer == "2023-05-08" for a in out.attempts)


def test_lock_request__interrupted_mid_lock__previous_lock_byte_identical(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    previous = b"# previous lock \xe2\x9c\x93\r\n[metadata]\n"
    (d / "pdm.lock").write_bytes(previous)
    (d / "lock.toml").write_text("previous record\n")

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        proj = Path(argv[argv.index("-p") + 1])
        (proj / "pdm.lock").write_text("half a lock")  # pdm got this far, then Ctrl-C
        raise KeyboardInterrupt

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    with pytest.raises(KeyboardInterrupt):
        lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert (d / "pdm.lock").read_bytes() == previous
    assert (d / "lock.toml").read_text() == "previous record\n"
    assert sorted(p.name for p in d.iterdir()) == ["lock.toml", "pdm.lock", "pyproject.toml"]


def test_lock_request__failed_lock__previous_lock_byte_identical_and_errors_recorded(tmp_path: Path) -> None:
    d = _project(tmp_path, ["matbench==0.1.0"])
    previous = b"[metadata]\ncontent_hash = \"sha256:00\"\n"
    (d / "pdm.lock").write_bytes(previous)
    msg = (MSG / "pdm" / "missing_version.txt").read_text()
    runner, _ = _fake_pdm(99, msg)
    runner.on([lock.sys.executable, "-m", "pip", "index"], "ERROR: No matching distribution found for zzz\n",
              returncode=1)
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 4 and (d / "pdm.lock").read_bytes() == previous
    record = (d / "lock.toml").read_text()
    assert 'category_label = "failed"' in record and "[[attempts]]" in record and "ok = false" in record


def test_lock_request__overrides__category_3_with_fidelity(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six==1.17.0"])
    runner, _ = _fake_pdm(0, "")
    req = lock.LockRequest("p", d, "3.10", overrides=(("six", "==1.17.0", "needed by the scripts"),),
                           fidelity=("reviewed pin six==1.17.0: needed by the scripts",))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 3 and out.strategy == "as-declared"
    record = (d / "lock.toml").read_text()
    assert "category = 3" in record and 'name = "six"' in record and "needed by the scripts" in record
    import tomllib
    assert tomllib.loads(record)["packages"] == 1


def test_later_bound__real_kgcnn_message__bound_after_pin_upload() -> None:
    # pdm 2.29.4, kgcnn_cogn locked with --exclude-newer 2023-05-07 (kgcnn 3.0.1 was uploaded 2023-05-22)
    probs = relax.diagnose((MSG / "pdm" / "date_bound_hides_pin.txt").read_text())
    assert [(p.kind, p.package) for p in probs] == [("not-found", "kgcnn")]
    runner = FakeRunner().on([lock.sys.executable, "-c"], "2023-05-22\n")
    moved = lock._later_bound(probs, ("kgcnn==3.0.1", "numpy<1.24"), "2023-05-07", runner=runner)
    assert moved is not None and moved[0] == "2023-05-23" and "kgcnn==3.0.1" in moved[1]
    assert runner.calls[0][0][-3:] == ("kgcnn", "3.0.1", "https://pypi.org/simple")
    # an unpinned requirement: the bound moves only when the whole project was first published after it
    first_2020 = FakeRunner().on([lock.sys.executable, "-c"], "2020-11-01\n")
    assert lock._later_bound(probs, ("kgcnn",), "2023-05-07", runner=first_2020) is None
    assert first_2020.calls[0][0][-3:] == ("kgcnn", "", "https://pypi.org/simple")
    first_later = FakeRunner().on([lock.sys.executable, "-c"], "2024-12-02\n")  # chipsff's case in the corpus
    moved2 = lock._later_bound(probs, ("kgcnn",), "2023-05-07", runner=first_later)
    assert moved2 is not None and moved2[0] == "2024-12-03" and "kgcnn was first published 2024-12-02" in moved2[1]


def test_upload_date__a_specifier__the_first_release_that_satisfies_it(tmp_path: Path) -> None:
    """The real script against a local PEP 691 listing: a version, a specifier, the first upload."""
    import json

    proj = tmp_path / "simple" / "paretoset"
    proj.mkdir(parents=True)
    proj.joinpath("index.html").write_text(json.dumps({"files": [
        {"filename": "paretoset-1.2.0-py3-none-any.whl", "upload-time": "2021-05-01T00:00:00Z"},
        {"filename": "paretoset-1.2.3-py3-none-any.whl", "upload-time": "2023-03-01T00:00:00Z"},
        {"filename": "paretoset-1.2.5.tar.gz", "upload-time": "2025-05-25T00:00:00Z"}]}))
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}/simple"
        got = {v: lock.upload_date("paretoset", v, runner=proc.run, index=index)
               for v in ("1.2.5", ">=1.2.3,<2.0.0", "", ">=3")}
    finally:
        server.shutdown()
    assert got == {"1.2.5": dt.date(2025, 5, 25), ">=1.2.3,<2.0.0": dt.date(2023, 3, 1), "": dt.date(2021, 5, 1),
                   ">=3": None}


def test_bench_lock__records__seconds_per_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("bench_lock", REPO / "bench" / "lock.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    d = _project(tmp_path, ["six"])
    runner, _ = _fake_pdm(1, "ERROR: Unable to find a resolution for six\n")
    lock.lock_request(lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14)), runner=runner,
                      python_exe=Path("/usr/bin/python3"), start="as-declared")
    (tmp_path / "unlocked").mkdir()
    rows = mod.rows(tmp_path)
    assert [(r["model"], r["category"], len(r["attempts"])) for r in rows] == [("proj", 2, 2), ("unlocked", None, 0)]
    sys.argv = ["bench/lock.py", str(tmp_path)]
    mod.main()
    out = capsys.readouterr().out
    assert "proj" in out and "date-bounded<2023-01-15" in out and "(no lock.toml)" in out


def _two_kgcnn(tmp: Path) -> Path:
    models = tmp / "models"
    for name, files in (("kgcnn_cogn", ("model.toml", "pyproject.toml", "pdm.lock", "lock.toml")),
                        ("kgcnn_megnet", ("model.toml", "pyproject.toml"))):
        (models / name).mkdir(parents=True)
        for f in files:
            shutil.copy(REPO / "models" / name / f, models / name / f)
    return models


def test_reuse_lock__identical_content_hash__lock_copied_and_checked(tmp_path: Path) -> None:
    reg = load_registry(_two_kgcnn(tmp_path))
    out = lock.reuse_lock(reg.select(["kgcnn_megnet"])[0], reg.select(["kgcnn_cogn"])[0])
    d = tmp_path / "models" / "kgcnn_megnet"
    assert (d / "pdm.lock").read_bytes() == (tmp_path / "models" / "kgcnn_cogn" / "pdm.lock").read_bytes()
    assert out.category == 3 and out.strategy == "reused" and out.packages > 50
    import tomllib
    rec = tomllib.loads((d / "lock.toml").read_text())
    assert rec["reused_from"] == "kgcnn_cogn" and rec["model"] == "kgcnn_megnet"
    assert any("reused from kgcnn_cogn" in f for f in rec["fidelity"])
    assert lock.check_lock_dir(d) == []


def test_reuse_lock__different_dependencies__refused_naming_both_hashes(tmp_path: Path) -> None:
    models = _two_kgcnn(tmp_path)
    py = models / "kgcnn_megnet" / "pyproject.toml"
    py.write_text(py.read_text().replace('"pandas",', '"pandas<2",'))
    reg = load_registry(models)
    with pytest.raises(lock.ResolutionError) as e:
        lock.reuse_lock(reg.select(["kgcnn_megnet"])[0], reg.select(["kgcnn_cogn"])[0])
    assert "content hash" in str(e.value) and "kgcnn_megnet" in str(e.value)
    assert not (models / "kgcnn_megnet" / "pdm.lock").exists()


SCEN = Path(__file__).parent / "scenarios" / "lock"


@pytest.mark.integration
@pytest.mark.network
@pytest.mark.parametrize("folder", ["matbench_example", "free_text"])
def test_cli_init_then_lock_project__matbench_style_folder__category_1_to_3_readable_log(
        folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    from pyrepro.cli import main
    models = tmp_path / "models"
    assert main(["init", str(SCEN / folder), "--name", "ex", "--models-dir", str(models), "--offline",
                 "--python", "3.10"]) == 0
    capsys.readouterr()
    code = main(["lock", "--project", str(models / "ex"), "--python", "3.10", "--no-aarch64", "--timeout", "8",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in out + err
    rec = tomllib.loads((models / "ex" / "lock.toml").read_text())
    assert rec["category"] in (1, 2, 3) and json_result(out)[0]["category"] == rec["category"]
    for step in rec["steps"]:  # every relaxation names its rule, the change and the error behind it
        assert step["rule"] and step["trigger"].strip() and step["reason"]
    assert main(["lock", "--check", "--project", str(models / "ex")]) == 0
    if folder == "matbench_example":
        # matbench==0.1.0 never existed; the contradictory scikit-learn pins cannot both hold
        assert rec["category"] == 2 and {s["package"] for s in rec["steps"]} >= {"matbench", "scikit-learn"}
        assert any(d.startswith("matbench 0.1.0 -> ") for d in rec["drift"])
        # init keeps the newest of the two declared scikit-learn pins (1.2.0), so that is the pin
        # the lock starts from; matbench 0.2 itself pins scikit-learn==0.24.1, and no matbench release
        # fits scikit-learn 1.2: the pin search keeps matbench's pin and widens scikit-learn's through
        # its rungs (1.2.*, 1.*) to its bare name, which takes 0.24.1, pinned as the nearest release
        sk = [(s["rule"], s["before"], s["after"]) for s in rec["steps"] if s["package"] == "scikit-learn"]
        assert sk == [("pin-search", "scikit-learn==1.2.0", "scikit-learn==0.24.1")], sk  # the nearest release
        assert "scikit-learn 1.2.0 -> 0.24.1: other major" in rec["pins_moved"], rec["pins_moved"]
        (search,) = rec["searches"]
        assert search["ok"] and search["queries"] >= 3
        assert any("matbench" in s["trigger"] for s in rec["steps"] if s["rule"] == "pin-search")


def test_relax__contradictory_exact_pins__newest_existing_kept() -> None:
    # pdm 2.29.4 on info.json {"scikit-learn": ["1.0.2", "1.2.0"]} -> "scikit-learn==1.0.2,==1.2.0"
    msg = (MSG / "pdm" / "contradictory_pins.txt").read_text()
    s = _step(msg, ("matbench==0.2", "scikit-learn==1.0.2,==1.2.0"),
              {"scikit-learn": ("1.0.1", "1.0.2", "1.1.0", "1.2.0", "1.3.0")})
    assert s is not None and (s.rule, s.after) == ("nearest-release", "scikit-learn==1.2.0")
    assert "1.0.2, 1.2.0" in s.reason
    # neither pinned version exists: the bound is dropped instead
    s2 = _step(msg, ("scikit-learn==0.0.1,==0.0.2",), {"scikit-learn": ("1.2.0",)})
    assert s2 is not None and s2.after == "scikit-learn"


def test_pdm_env__old_target_python__constrained_compat_libs_in_pyrepro_cache(
        isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PDM_CACHE_DIR", raising=False)
    broken = isolated_cache / "pdm" / ".compat_libs"
    (broken / "packaging-26.4.dist-info").mkdir(parents=True)  # what an unconstrained install left behind
    env = lock._pdm_env(Path("/usr/bin/python3.8"))
    assert env["PDM_CACHE_DIR"] == str(isolated_cache / "pdm")
    assert "packaging<25" in Path(env["PIP_CONSTRAINT"]).read_text()
    assert not broken.exists()


@pytest.mark.integration
def test_lock_project__python_38_target__locks(tmp_path: Path, isolated_cache: Path) -> None:
    """Real pdm against PyPI for a Python 3.8 target (it failed in seconds with a TypeError)."""
    from pyrepro.errors import MissingToolError
    from pyrepro.interpreters import find_python

    try:
        find_python("3.8")
    except MissingToolError:
        pytest.skip("no Python 3.8 interpreter here")
    d = tmp_path / "p"
    d.mkdir()
    (d / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\nrequires-python = "==3.8.*"\n'
                                      'dependencies = ["six==1.16.0"]\n[tool.pdm]\ndistribution = false\n')
    out = lock.lock_request(lock.LockRequest("p", d, "3.8"), aarch64=False)
    assert out.ok, out.message


def test_lock_request__transient_database_locked__retried_not_relaxed(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pyrepro.pdmrun.TRANSIENT_PAUSE", 0.0)
    d = _project(tmp_path, ["six"])
    runner, seen = _fake_pdm(1, "sqlite3.OperationalError: database is locked\n")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"),
                            aarch64=False)
    assert out.category == 1 and len(out.attempts) == 1 and out.steps == () and len(seen) == 2


def test_error_excerpt__conflict_then_traceback_and_warnings__the_conflict_is_recorded() -> None:
    """A verbose pdm run ends with its own traceback and deprecation noise; the record keeps
    the resolver's conflict message (issue 12)."""
    text = (MSG / "pdm" / "conflict_verbose_traceback.txt").read_text()
    assert "Traceback" in text and "DeprecationWarning" in text.splitlines()[-2]
    got = relax.error_excerpt(text)
    assert "Unable to find a resolution for urllib3" in got and "urllib3==1.20 (from project)" in got
    assert "Traceback" not in got and "Deprecation" not in got and "site-packages" not in got


def test_error_excerpt__unrecognised__last_lines_without_traceback_frames() -> None:
    text = "step one\nTraceback (most recent call last):\n  File \"x.py\", line 1\n    boom()\nValueError: bad\n" \
           "x.py:3: FutureWarning: soon\n"
    assert relax.error_excerpt(text) == "step one\nValueError: bad"


def test_lock_request__failed_attempt__records_the_conflict_not_the_noise(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    runner, _ = _fake_pdm(99, (MSG / "pdm" / "conflict_verbose_traceback.txt").read_text())
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 4
    assert all("following conflicts" in a.error and "Traceback" not in a.error for a in out.attempts)


def test_nearest_version__across_a_major__the_adjacent_release_not_the_segment_closest() -> None:
    cp311 = ["1.1.3", "1.2.0", "1.3.2", "1.5.1", "1.7.0"]  # scikit-learn releases with CPython 3.11 wheels
    assert relax.nearest_version("0.24.1", cp311) == "1.1.3"
    assert relax.nearest_version("0.1.10", ["0.1.9", "0.1.11", "0.2.1"]) == "0.1.9"  # a tie: the older
    assert relax.nearest_version("2.0", ["1.0", "1.9", "5.0"]) == "1.9"
    assert relax.nearest_version("1.0", []) is None


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_V = st.tuples(st.integers(0, 5), st.integers(0, 30), st.integers(0, 12)).map(lambda t: f"{t[0]}.{t[1]}.{t[2]}")


@given(wanted=_V, available=st.lists(_V, max_size=12))
def test_nearest_version__any_releases__a_neighbour_of_the_wanted_one(wanted: str, available: list[str]) -> None:
    from packaging.version import Version

    got = relax.nearest_version(wanted, available)
    others = sorted({Version(a) for a in available} - {Version(wanted)})
    if not others:
        assert got is None
        return
    below = [v for v in others if v < Version(wanted)]
    above = [v for v in others if v > Version(wanted)]
    assert Version(got) in ({below[-1]} if below else set()) | ({above[0]} if above else set())  # type: ignore[arg-type]


def test_lock_request__cache_database_stays_locked__error_to_rerun_no_record_no_category_4(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen when two locks shared pyrepro's pdm cache: 'database is locked' through every retry is
    no verdict on the requirements. Nothing is written; the error says to rerun."""
    from pyrepro.errors import ExternalToolError

    monkeypatch.setattr("pyrepro.pdmrun.TRANSIENT_PAUSE", 0.0)
    d = _project(tmp_path, ["six"])
    (d / "pdm.lock").write_text("previous lock\n")
    runner, seen = _fake_pdm(99, "INFO: ...\n[OperationalError]: database is locked\n")
    with pytest.raises(ExternalToolError, match="database is locked") as e:
        lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"),
                          aarch64=False)
    assert "rerun when it has finished" in (e.value.hint or "")
    assert len(seen) == lock.TRANSIENT_RETRIES + 1
    assert not (d / "lock.toml").exists() and (d / "pdm.lock").read_text() == "previous lock\n"


def test_pdm_env__http_cache_past_its_bound__removed_before_the_attempt(
        isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pdm's HTTP cache (one SQLite file) reached 41 GB in one corpus run: past the bound it goes."""
    monkeypatch.delenv("PDM_CACHE_DIR", raising=False)
    http = isolated_cache / "pdm" / "http"
    http.mkdir(parents=True)
    db = http / "http-cache.db"
    db.write_bytes(b"x" * 3 * 1024 * 1024)
    (http / "http-cache.db-wal").write_bytes(b"w" * 1024)
    monkeypatch.setenv("PYREPRO_PDM_HTTP_CACHE_MB", "4")
    lock._pdm_env(None)
    assert db.exists()  # within its bound: kept
    monkeypatch.setenv("PYREPRO_PDM_HTTP_CACHE_MB", "2")
    lock._pdm_env(None)
    assert not db.exists() and not (http / "http-cache.db-wal").exists()


def test_lock_request__as_declared_backtracks__its_share_of_the_budget_then_date_bounded(tmp_path: Path) -> None:
    """snap_mlearn: as-declared backtracked for the whole 900 s, then date-bounded locked in 25 s.
    With a submission date to fall back on, as-declared gets a third of the per-attempt budget;
    the date-bounded attempt gets all of it; the record says why the first stopped."""
    from pyrepro.errors import ExternalToolError

    d = _project(tmp_path, ["six"])
    budgets: list[tuple[bool, float | None]] = []

    def runner(cmd, *, cwd=None, env=None, check=True, timeout=None, on_line=None, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        bounded = "--exclude-newer" in argv
        budgets.append((bounded, timeout))
        if not bounded:
            raise ExternalToolError(tuple(argv), -1, "", "", timeout=timeout)
        proj = Path(argv[argv.index("-p") + 1])
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), timeout=900, aarch64=False,
                            start="as-declared")
    assert budgets == [(False, 300.0), (True, 900)]
    assert out.category == 2 and out.strategy == "date-bounded"
    assert "timed out after 300" in out.attempts[0].error


def test_lock_request__timeout_with_no_date__uv_resolution_pinned_then_locked(tmp_path: Path) -> None:
    """chgnet_mlearn (jarvis) and graphgps (corpus5 dev): pdm backtracked until its budget ran out,
    with no conflict to relax. With no date the as-declared attempt gets a third of the budget (a
    relaxation follows); uv resolves the same set for the same target in seconds; its versions of
    the unpinned requirements become pins (rule resolver-guided, uncounted), and pdm locks them."""
    from pyrepro.errors import ExternalToolError
    from pyrepro.uvtool import uv_executable

    d = _project(tmp_path, ["six", "numpy==1.23.5", "torch-scatter"])
    calls: list[tuple[str, float | None]] = []

    def runner(cmd, *, cwd=None, env=None, check=True, timeout=None, on_line=None, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[:3] == [uv_executable(), "pip", "compile"]:
            reqs = Path(argv[3]).read_text().split()
            calls.append(("uv " + " ".join(reqs), timeout))
            if "torch-scatter" in reqs:  # its sdist needs torch to build its metadata
                return Completed(tuple(argv), 1, "", "error: Failed to build `torch-scatter==2.1.2`\n  cause: ...")
            assert argv[argv.index("--python-version") + 1] == "3.10.0" and "--exclude-newer" not in argv
            return Completed(tuple(argv), 0, "numpy==1.23.5\nsix==1.16.0\n", "")
        proj = Path(argv[argv.index("-p") + 1])
        deps = lock.read_pyproject(proj / "pyproject.toml")["project"]["dependencies"]
        calls.append(("pdm " + " ".join(deps), timeout))
        if "six" in deps:
            raise ExternalToolError(tuple(argv), -1, "", "", timeout=timeout)
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    out = lock.lock_request(lock.LockRequest("q", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"),
                            timeout=900, aarch64=False)
    assert calls[0] == ("pdm six numpy==1.23.5 torch-scatter", 300.0)  # a third: relaxation follows
    assert [c for c, _ in calls[1:]] == ["uv six numpy==1.23.5 torch-scatter", "uv six numpy==1.23.5",
                                         "pdm six==1.16.0 numpy==1.23.5 torch-scatter"]
    assert out.category == 2 and [s.rule for s in out.steps] == ["resolver-guided"]
    assert "timed out after 300" in out.steps[0].trigger and "uv's resolver" in out.steps[0].reason
    assert lock.read_pyproject(d / "pyproject.toml")["project"]["dependencies"] == [
        "six==1.16.0", "numpy==1.23.5", "torch-scatter"]
    assert lock.check_lock_dir(d) == []


def test_relax__not_found_with_a_former_pypi_name__former_name_once() -> None:
    # chemical_vae on 3.6 (dev corpus): 'rdkit' has no release for 3.6; its wheels were 'rdkit-pypi'
    msg = ("[CandidateNotFound]: Unable to find candidates for rdkit. There may exist some issues with the "
           "package name or network condition.")
    s = _step(msg, ("numpy", "rdkit>=2020.9; python_version >= '3'"), {"rdkit": ("2022.3.3", "2023.9.1")})
    assert s is not None and (s.rule, s.after) == ("former-name", 'rdkit-pypi>=2020.9; python_version >= "3"')
    assert "rdkit-pypi" in s.reason and "3.6" in s.reason  # the table's reason goes with it
    # tried once: with the former name already there, nothing more from this rule
    assert _step(msg, ("rdkit", "rdkit-pypi")) is None
    # a name without a former one is left to the other rules
    msg2 = msg.replace("rdkit", "nosuchthing")
    assert _step(msg2, ("nosuchthing",)) is None


def _pdm_failing_while(failing: Any, seen: list[tuple[str, ...]], message: str) -> Any:
    """A fake ``pdm lock``: fails with ``message`` while ``failing(dependencies)`` holds, else writes
    a good lock; records each attempt's dependencies (not the --append runs) in ``seen``."""
    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        proj = Path(argv[argv.index("-p") + 1])
        deps = lock.read_pyproject(proj / "pyproject.toml")["project"]["dependencies"]
        if "--append" not in argv:
            seen.append(tuple(deps))
        if failing(deps):
            return Completed(tuple(argv), 1, "", message)
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    return pdm


def _pdm_not_finding(prefix: str, missing: str, seen: list[tuple[str, ...]], index_answer: Completed) -> FakeRunner:
    """A fake pdm that cannot find ``missing`` while a requirement starts with ``prefix`` (else it
    locks), with ``pip index versions`` answering ``index_answer`` and no upload times."""
    runner = FakeRunner()
    runner.on(lock.pdm_command(), _pdm_failing_while(
        lambda deps: any(x.startswith(prefix) for x in deps), seen,
        f"[CandidateNotFound]: Unable to find candidates for {missing}. There may exist "
        "some issues with the package name or network condition.\n"))
    runner.on([lock.sys.executable, "-m", "pip", "index"], index_answer)
    runner.on([lock.sys.executable, "-c"], Completed((), 0, "\n", ""))
    return runner


def test_lock_request__exact_pin_conflicts_with_a_dependency__nearest_release_that_fits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mbd-mace (corpus2): numpy==2.2.0 against mace-torch 0.3.9's numpy<2.0. Widening the pin
    to >=2.2,<3 conflicted the same way; the pin moves to the release nearest it that fits. Since
    issue 42 the pin search decides it (uv as the oracle, answered here from a small index): its
    rungs 2.2.* and 2.* do not resolve, the bare name takes 1.26.4, which is pinned."""
    from tests.fakeindex import FakeIndex
    from tests.test_lock_search import _Files, _pip_index, _uv

    monkeypatch.setattr(lock, "_index", lambda: _Files())  # no Requires-Python of the fake releases
    idx = FakeIndex().add("mace-torch", "0.3.9", "numpy<2.0")
    for v in ("2.3.0", "2.2.1", "2.2.0", "2.0.0", "1.26.4", "1.26.3", "1.25.2"):
        idx.add("numpy", v)
    d = _project(tmp_path, ["mace-torch==0.3.9", "numpy==2.2.0"])
    seen: list[tuple[str, ...]] = []
    pdm = _pdm_failing_while(lambda deps: "numpy==2.2.0" in deps, seen,
                             "ERROR: Unable to find a resolution for numpy\nbecause of the following conflicts:\n"
                             "  numpy<2.0 (from mace-torch@0.3.9)\n  numpy==2.2.0 (from project)\n")
    from pyrepro.uvtool import uv_executable

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on((uv_executable() or "uv", "pip", "compile"), _uv(idx))
    runner.on((lock.sys.executable, "-m", "pip", "index", "versions"), _pip_index(idx))
    out = lock.lock_request(lock.LockRequest("p", d, "3.11"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and out.strategy == "relaxed"
    assert [(s.rule, s.after) for s in out.steps] == [("pin-search", "numpy==1.26.4")]
    assert seen[-1] == ("mace-torch==0.3.9", "numpy==1.26.4")
    assert "numpy==2.2.0" in out.steps[0].reason and "nearest release" in out.steps[0].reason
    assert lock.check_lock_dir(d) == []


def test_relax__conflict_brought_by_a_package_never_imported__its_pin_gives_first() -> None:
    from pyrepro import relax

    msg = ("ERROR: Unable to find a resolution for scikit-learn\nbecause of the following conflicts:\n"
           "  scikit-learn==1.0.2 (from matbench@0.1.0)\n  scikit-learn==1.2.0 (from project)\n")
    facts = relax.Facts(versions={"scikit-learn": ("1.0.2", "1.2.0", "1.3.0")}, imported=frozenset({"scikit-learn"}))
    step = relax.relax(msg, ["matbench==0.1.0", "scikit-learn==1.2.0"], facts)
    assert step is not None and step.rule == "widen-conflict" and step.package == "matbench"
    # the same conflict when the harness is imported too: the pin of what conflicts moves
    step = relax.relax(msg, ["matbench==0.1.0", "scikit-learn==1.2.0"],
                       relax.Facts(versions=facts.versions, imported=frozenset({"scikit-learn", "matbench"})))
    assert step is not None and step.rule == "nearest-compatible" and step.after == "scikit-learn==1.0.2"


def test_lock_request__a_name_the_index_does_not_have__dropped_said_so(tmp_path: Path) -> None:
    """tartarus (corpus4 dev): a conda-only package in an environment file (conda-forge's xtb-python
    before the name table knew it) is no PyPI name. No rule found another name, so the lock
    stopped; the requirement is dropped with the reason and the lock goes on (the import check
    then says whether the code needs it)."""
    d = _project(tmp_path, ["numpy", "condaonly-tool==20.2"])
    seen: list[tuple[str, ...]] = []
    runner = _pdm_not_finding("condaonly-tool", "condaonly-tool", seen,
                              Completed((), 1, "", "ERROR: No matching distribution found for condaonly-tool\n"))
    out = lock.lock_request(lock.LockRequest("p", d, "3.11"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and [s.rule for s in out.steps] == ["not-on-index"]
    assert seen[-1] == ("numpy",)
    assert "does not exist on the package index for this Python" in out.steps[0].reason
    # a name whose release list is unknown (the index not asked) is never dropped
    from pyrepro import relax
    problem = relax.diagnose("[CandidateNotFound]: Unable to find candidates for condaonly-tool.")
    assert relax.rule_not_on_index(problem[0], ("condaonly-tool",), relax.Facts()) is None


def test_lock_request__a_large_set__uv_checks_it_before_pdm(tmp_path: Path) -> None:
    """geoldm (corpus8 dev): a 94-line pip freeze took six relaxation steps of 30-90 s of pdm each.
    A set of UV_PRECHECK_MIN requirements or more is first resolved by uv, as declared too: when uv
    finds no solution, the next strategy or step follows from uv's explanation without a pdm attempt."""
    from pyrepro import uvtool
    from tests.fakes import answer_uv_compile

    fillers = [f"filler{i}" for i in range(uvtool.UV_PRECHECK_MIN)]
    d = _project(tmp_path, [*fillers, "condaonly-tool==20.2", "condaonly-two==1.0"])
    seen: list[tuple[str, ...]] = []
    runner = _pdm_not_finding("condaonly-tool", "condaonly-tool", seen,
                              Completed((), 1, "", "ERROR: No matching distribution found\n"))
    uv_sets: list[str] = []

    def uv(argv, cwd, env):  # type: ignore[no-untyped-def]
        text = Path(argv[3]).read_text()
        uv_sets.append(text)
        if "condaonly-two" in text:
            return Completed(tuple(argv), 1, "", "  x No solution found when resolving dependencies:\n  `-> Because "
                             "there is no version of condaonly-two==1.0 and you require condaonly-two==1.0, we can "
                             "conclude that your requirements are unsatisfiable.\n")
        return Completed(tuple(argv), 0, "".join(f"{f}==1.0\n" for f in fillers), "")

    runner.responses.insert(0, ((uvtool.uv_executable() or "uv", "pip", "compile"), uv))
    out = lock.lock_request(lock.LockRequest("p", d, "3.11"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and [(s.rule, s.package) for s in out.steps] == [
        ("not-on-index", "condaonly-two"), ("not-on-index", "condaonly-tool")]
    # the as-declared attempt too is uv's (mlearn_analysis_Ni_orb-v2: pdm had timed out twice on a
    # conflict uv names in seconds); pdm: the set without condaonly-two, then the final set
    assert len(seen) == 2 and seen[0] == (*fillers, "condaonly-tool==20.2") and seen[-1] == tuple(fillers)
    assert len(uv_sets) == 3 and [a.ok for a in out.attempts] == [False, False, True]
    assert out.attempts[0].strategy == "as-declared" and out.attempts[0].error.startswith("uv, before pdm:")
    assert out.attempts[0].seconds < 5
    # below UV_PRECHECK_MIN requirements uv is not asked before pdm
    (tmp_path / "small").mkdir()
    small = _project(tmp_path / "small", ["numpy", "condaonly-tool==20.2"])
    quiet = _pdm_not_finding("condaonly-tool", "condaonly-tool", [],
                             Completed((), 1, "", "ERROR: No matching distribution found\n"))
    answer_uv_compile(quiet)
    lock.lock_request(lock.LockRequest("p", small, "3.11"), runner=quiet, python_exe=Path("/usr/bin/python3"))
    assert not any(c[0][1:3] == ("pip", "compile") for c in quiet.calls)


def test_lock_request__a_stray_install_word_unavailable_by_the_date__dropped_unless_imported(tmp_path: Path) -> None:
    """solubility-posts (corpus5 dev): a README's `pip install pandas ... install ...` declared PyPI's
    `install`, first published after the submission date, and the index gave no upload time to move
    the bound by. The code never imports it, so it is dropped with the reason and the lock goes on;
    an imported requirement in the same spot is never dropped by this rule."""
    d = _project(tmp_path, ["pandas", "install"])
    seen: list[tuple[str, ...]] = []
    pdm = _pdm_failing_while(lambda deps: "install" in deps, seen,
                             "[CandidateNotFound]: Unable to find candidates for install. There may exist "
                             "some issues with the package name or network condition.\n")
    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on([lock.sys.executable, "-m", "pip", "index"], Completed((), 0, "install (1.3.5)\nAvailable versions: 1.3.5\n", ""))
    runner.on([lock.sys.executable, "-c"], Completed((), 0, "\n", ""))  # the index gives no upload time
    answer_uv_compile(runner)
    req = lock.LockRequest("p", d, "3.9", submitted=dt.date(2021, 9, 14), imported=frozenset({"pandas"}))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and [s.rule for s in out.steps] == ["unimported-unavailable"]
    assert seen[-1] == ("pandas",) and "never imports it" in out.steps[0].reason
    from pyrepro import relax
    (problem,) = relax.diagnose("[CandidateNotFound]: Unable to find candidates for install.")
    facts = relax.Facts(versions={"install": ("1.3.5",)}, imported=frozenset({"install"}))
    assert relax.rule_unimported_unavailable(problem, ("install",), facts) is None  # imported: kept
    facts = relax.Facts(versions={"install": ("1.3.5",)}, imported=frozenset())
    assert relax.rule_unimported_unavailable(problem, ("install==1.0",), facts) is None  # a pin: nearest-release's


UV_YANKED_CHAIN = (
    "error: No solution found when resolving dependencies\n"
    "  cause: Because conda>=4.3.13 was yanked (reason: Pip installing conda leads to broken UX) and only the "
    "following versions of conda are available:\n             conda<4.3.0\n             conda>=4.3.13\n"
    "         we can conclude that conda>=4.3.0 cannot be used.\n"
    "         And because all versions of conda-minify depend on conda>=4.3.0 and you require conda-minify==0.1.2, "
    "we can conclude that your requirements are unsatisfiable.\n")


@pytest.mark.parametrize("imported", [frozenset({"numpy"}), frozenset({"numpy", "conda-minify"})])
def test_lock_request__a_dependency_of_an_unimported_requirement_is_gone__uv_names_it_dropped(
        tmp_path: Path, imported: frozenset[str]) -> None:
    """dl-chem-gnn (corpus5 held): a conda environment file declares conda-minify, a conda tool the
    code never imports, whose every release needs PyPI's conda, yanked after 4.3. pdm says only
    that it cannot find conda; uv's explanation runs through conda-minify, which is dropped (rule
    unimported-unresolvable) and the lock goes on. Were it imported, the stop says uv's reason."""
    d = _project(tmp_path, ["numpy", "conda-minify==0.1.*"])
    seen: list[tuple[str, ...]] = []
    runner = _pdm_not_finding("conda-minify", "conda", seen,
                              Completed((), 0, "conda (4.3.16)\nAvailable versions: 4.3.16\n", ""))
    answer_uv_compile(runner, stderr=UV_YANKED_CHAIN)
    req = lock.LockRequest("p", d, "3.8", submitted=dt.date(2022, 3, 1), imported=imported)
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"))
    if "conda-minify" in imported:
        assert out.category == 4 and not out.steps
        assert "uv's resolver found no resolution either" in out.message and "conda>=4.3.13 was yanked" in out.message
        return
    assert out.category == 2 and [s.rule for s in out.steps] == ["unimported-unresolvable"]
    assert seen[-1] == ("numpy",) and "never imports" in out.steps[0].reason
    assert "conda-minify" in out.steps[0].trigger
    assert lock.check_lock_dir(d) == []


def _init_sub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, requirements: str):  # type: ignore[no-untyped-def]
    """``pyrepro init`` (offline) of a folder with run.py and requirements.txt: the model's spec."""
    from pyrepro.init import init_model
    from pyrepro.registry import parse_model

    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "run.py").write_text(code)
    (sub / "requirements.txt").write_text(requirements)
    init_model(sub, name="sub", models_dir=tmp_path / "models", online=False, cache=tmp_path / "cache")
    return parse_model(tmp_path / "models" / "sub" / "model.toml")


def test_persist__a_renamed_then_relaxed_pin__the_pyproject_is_what_was_locked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rxn-yields (corpus4 held): rdkit==2020.03.3.0 became rdkit-pypi (former-name), then moved and
    widened. model.toml kept the old rdkit pin beside remove = ["rdkit"], the regenerated pyproject
    named rdkit again, and the build refused the lock as stale. What model.toml says after the
    steps must be exactly the requirement set that was locked."""
    from pyrepro import relax
    from pyrepro.generate import dependencies
    from pyrepro.registry import parse_model

    spec = _init_sub(tmp_path, monkeypatch, "import numpy\nimport rdkit\n", "rdkit==2020.03.3.0\nnumpy\n")
    reqs = tuple(dependencies(spec))
    assert "rdkit==2020.3.3.0" in reqs or "rdkit==2020.03.3.0" in reqs
    chain = [("former-name", "rdkit-pypi==2020.03.3.0"), ("nearest-release", "rdkit-pypi==2020.9.5.2"),
             ("widen-conflict", "rdkit-pypi>=2020.9,<2021"), ("widen-conflict", "rdkit-pypi")]
    steps, cur = [], reqs
    for rule, after in chain:
        i = next(k for k, r in enumerate(cur) if relax.req_name(r) in ("rdkit", "rdkit-pypi"))
        new = tuple(sorted((*cur[:i], after, *cur[i + 1:])))
        steps.append(relax.Step(rule, relax.req_name(after), cur[i], after, "test", new))
        cur = new
    lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), steps)
    assert tuple(dependencies(parse_model(spec.path))) == cur == ("numpy", "rdkit-pypi")


def test_persist__renamed_then_dropped__dropped_not_removed__the_import_check_still_sees_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """graph2graph (corpus6 dev, Python 2.7): rdkit became rdkit-pypi (former-name), which has no
    Python 2 release, so it was dropped (not-on-index). Written to ``remove``, the reviewer's list,
    the import check left rdkit out and the submission passed without it. A relaxation's renames
    and drops go to ``dropped``: out of the pyproject, still import-checked."""
    from pyrepro import relax
    from pyrepro.generate import dependencies
    from pyrepro.registry import parse_model

    spec = _init_sub(tmp_path, monkeypatch, "import numpy\nimport rdkit\n", "numpy\n")
    steps = [relax.Step("former-name", "rdkit", "rdkit", "rdkit-pypi", "test", ("numpy", "rdkit-pypi")),
             relax.Step("not-on-index", "rdkit-pypi", "rdkit-pypi", "", "test", ("numpy",))]
    lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), steps)
    after = parse_model(spec.path)
    assert dependencies(after) == ["numpy"]
    assert set(after.dependencies.dropped) == {"rdkit", "rdkit-pypi"} and after.dependencies.remove == ()


def test_persist__guided_pins_taken_back_then_a_wheel_pin__model_toml_stays_toml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """equibind (corpus6 dev): a new Python took back the only pins (resolver-guided); tomlkit wrote
    the emptied array of tables as ``pins = []``, and the sdist-to-wheel pin appended next came out
    as ``pins = [name = ...``: no TOML, and every later read of model.toml failed."""
    import tomllib

    from pyrepro import lockplan, relax
    from pyrepro.registry import parse_model

    spec = _init_sub(tmp_path, monkeypatch, "import wandb\n", "wandb\n")
    req = lock.LockRequest.from_spec(spec)
    lock.persist_to_model_toml(req, [relax.Step(lockplan.GUIDED_RULE, "wandb", "wandb", "wandb==0.22.3", "uv",
                                                ("wandb==0.22.3",))])
    lock.persist_python(req, "3.10", "a new Python")
    assert "pins" not in tomllib.loads(spec.path.read_text())["dependencies"]
    spec.path.write_text(spec.path.read_text().replace("[dependencies]\n", "[dependencies]\npins = []\n"))  # as written before
    lock.persist_to_model_toml(req, [relax.Step("sdist-to-wheel", "wandb", "wandb==0.1", "wandb==0.2", "wheel", ())])
    doc = tomllib.loads(spec.path.read_text())
    assert [(p["name"], p["spec"]) for p in doc["dependencies"]["pins"]] == [("wandb", "==0.2")]
    assert parse_model(spec.path).python == "3.10"


def test_persist__a_new_python_or_date__takes_back_the_guided_pins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """graphgps (corpus5 dev): uv's versions for CPython 3.10 with no date were pinned (rule
    resolver-guided); the era relock that followed kept them, and each pin released in 2026 moved
    its date bound forward until it was 2026 again. A pin resolved for one target is not the
    submission's: a new Python or date drops it; declared pins stay."""
    from pyrepro import lockplan, relax
    from pyrepro.generate import dependencies
    from pyrepro.registry import parse_model

    spec = _init_sub(tmp_path, monkeypatch, "import numpy\nimport wandb\n", "numpy==1.23.5\nwandb\n")
    reqs = tuple(dependencies(spec))
    step = relax.Step(lockplan.GUIDED_RULE, "wandb", "wandb", "wandb==0.22.3", "uv's resolver found it",
                      tuple(sorted(r if r != "wandb" else "wandb==0.22.3" for r in reqs)))
    req = lock.LockRequest.from_spec(spec)
    lock.persist_to_model_toml(req, [step])
    assert "wandb==0.22.3" in dependencies(parse_model(spec.path))
    lock.persist_era(req, "2023-10-06", "rule era-of-failing-sdist")
    assert sorted(dependencies(parse_model(spec.path))) == ["numpy==1.23.5", "wandb"]
    lock.persist_to_model_toml(req, [step])
    lock.persist_python(req, "3.9", "rule sdist-to-older-python")
    assert sorted(dependencies(parse_model(spec.path))) == ["numpy==1.23.5", "wandb"]
    assert "wandb" in (tmp_path / "models" / "sub" / "pyproject.toml").read_text()


def test_relax__widen_conflict__origins_that_admit_our_pin_come_last() -> None:
    """deep-drug-coder (corpus5 dev): numpy==1.16.5 (ours) against rdkit-pypi's numpy==1.20. Six
    declared pins whose numpy requirement admits 1.16.5 (seaborn's numpy>=1.9.3) were widened one
    by one before the cause, and the eight steps ran out. The origin that excludes our pin goes
    first; the harmless ones after everything else."""
    from pyrepro import relax

    msg = ("ERROR: Unable to find a resolution for numpy\nbecause of the following conflicts:\n"
           "  numpy<2.0,>=1.16.0 (from tensorflow-gpu@2.0.0)\n  numpy==1.16.5 (from project)\n"
           "  numpy==1.20 (from rdkit-pypi@2020.9.5.2)\n  numpy>=1.9.3 (from seaborn@0.9.0)\n"
           "  numpy>=1.13.3 (from scipy@1.3.1)\n")
    reqs = ("numpy==1.16.5", "rdkit-pypi==2020.9.5.2", "scipy==1.3.1", "seaborn==0.9.0", "tensorflow-gpu==2.0.0")
    facts = relax.Facts(imported=frozenset({"numpy", "rdkit-pypi", "tensorflow-gpu"}))
    order = []
    cur = reqs
    for _ in range(3):
        step = relax.relax(msg, cur, facts)
        assert step is not None
        order.append(step.package)
        cur = step.requirements
    # before: seaborn and scipy (never imported) went first; now our pin, then the cause
    assert order == ["numpy", "rdkit-pypi", "numpy"]  # scipy and seaborn never widened
    # with our pin exact, an imported cause goes before never-imported harmless origins
    step = relax.relax(msg, ("numpy==1.16.5", "rdkit-pypi==2020.9.5.2", "seaborn==0.9.0"),
                       relax.Facts(imported=frozenset({"rdkit-pypi"})))
    assert step is not None and step.package in ("numpy", "rdkit-pypi")


def test_relax__widen_conflict__unpinned_ours__lower_bounds_under_every_ceiling_come_last() -> None:
    """deep-drug-coder, later: our numpy is unpinned, rdkit-pypi>=2020.9,<2021 still brings
    numpy==1.20 (no release for 3.6); matplotlib's, pandas' and molsets' pins were widened next
    until the limit. A lower bound at or below every other constraint's ceiling cannot cause it."""
    from pyrepro import relax

    msg = ("ERROR: Unable to find a resolution for numpy\nbecause of the following conflicts:\n"
           "  numpy (from project)\n  numpy<2.0,>=1.16.0 (from tensorflow-gpu@2.0.0)\n"
           "  numpy==1.20 (from rdkit-pypi@2020.9.5.2)\n  numpy>=1.9.3 (from seaborn@0.9.0)\n"
           "  numpy>=1.3 (from matplotlib@3.1.1)\n")
    reqs = ("matplotlib==3.1.1", "numpy", "rdkit-pypi>=2020.9,<2021", "seaborn==0.9.0", "tensorflow-gpu==2.0.0")
    facts = relax.Facts(imported=frozenset({"numpy", "rdkit-pypi", "tensorflow-gpu"}))
    order, cur = [], reqs
    for _ in range(3):
        step = relax.relax(msg, cur, facts)
        assert step is not None
        order.append(step.package)
        cur = step.requirements
    assert "rdkit-pypi" in order and not {"seaborn", "matplotlib"} & set(order), order


def test_lock_request__a_rename_moves_the_requirement_in_the_generated_order__lock_hash_matches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gemnet (corpus6 dev): pytorch==1.10 was renamed to torch==1.10 where pytorch stood, and the
    lock was made for that order; model.toml then lists it as torch, so the regenerated pyproject
    has the same requirements in another order, and the build refused the lock as stale. The
    lock takes the content hash of the pyproject it belongs to."""
    import tomlkit

    from pyrepro.generate import render_pyproject
    from pyrepro.registry import parse_model

    spec = _init_sub(tmp_path, monkeypatch, "import numpy\nimport yaml\n", "numpy\n")
    doc = tomlkit.parse(spec.path.read_text())
    doc["dependencies"]["extra"].append("pytorch==1.10")  # as a declaration pyrepro did not map wrote it
    spec.path.write_text(tomlkit.dumps(doc))
    spec = parse_model(spec.path)
    (spec.path.parent / "pyproject.toml").write_text(render_pyproject(spec))
    req = lock.LockRequest.from_spec(spec)
    seen: list[tuple[str, ...]] = []
    runner = _pdm_not_finding("pytorch", "pytorch", seen,
                              Completed((), 0, "pytorch (1.0.2)\nAvailable versions: 1.0.2\n", ""))
    answer_uv_compile(runner)
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"),
                            persist=lock.persist_to_model_toml)
    assert out.category == 2 and "rename" in [s.rule for s in out.steps]
    written = lock.read_pyproject(req.project_dir / "pyproject.toml")["project"]["dependencies"]
    assert sorted(written) == sorted(seen[-1])
    assert lock.check_lock_dir(req.project_dir) == []


def test_lock_request__pdm_refuses_the_set_uv_resolved__the_lock_is_made_from_uvs_resolution(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """molmap and gaspy-regress (corpus6 dev), oximachine (corpus5 held): uv resolves the set for
    CPython 3.7, pdm refuses even the pinned set (its lock covers a whole Python range and every
    marker). The lock is made from uv's resolution, hashes from uv and file names from the index;
    the record says so, and the lock passes pdm's check."""
    from pyrepro.uvtool import uv_executable

    A, B, C = "a" * 64, "b" * 64, "c" * 64
    d = _project(tmp_path, ["six", "numpy"])
    uv_locks: list[bool] = []
    pdm_sets: list[tuple[str, ...]] = []

    def runner(cmd, *, cwd=None, env=None, check=True, timeout=None, on_line=None, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[:3] == [uv_executable(), "pip", "compile"]:
            if "--generate-hashes" in argv:
                constrained = "--constraint" in argv and "dataclasses!=0.8" in Path(
                    argv[argv.index("--constraint") + 1]).read_text()
                uv_locks.append(constrained)
                odd = "" if constrained else f"dataclasses==0.8 \\\n    --hash=sha256:{C}\n"  # uv reads no <3.7
                return Completed(tuple(argv), 0, f"numpy==1.21.6 \\\n    --hash=sha256:{A} \\\n    --hash=sha256:{B}\n"
                                 f"{odd}six==1.16.0 \\\n    --hash=sha256:{C}\n", "")
            return Completed(tuple(argv), 0, "numpy==1.21.6\nsix==1.16.0\n", "")
        proj = Path(argv[argv.index("-p") + 1])
        pdm_sets.append(tuple(lock.read_pyproject(proj / "pyproject.toml")["project"]["dependencies"]))
        return Completed(tuple(argv), 1, "", "ERROR: \n[ResolutionError]: Unable to find a resolution")

    class FakeIndex:
        def requires_python(self, name: str, version: str) -> str | None:
            return ">=3.6, <3.7" if (name, version) == ("dataclasses", "0.8") else ">=3.7"

        def file_hashes(self, name: str, version: str) -> list[tuple[str, str]]:
            return {"numpy": [("numpy-1.21.6-cp37-cp37m-manylinux_2_12_x86_64.whl", f"sha256:{A}"),
                              ("numpy-1.21.6.zip", f"sha256:{'d' * 64}")],
                    "six": [("six-1.16.0-py2.py3-none-any.whl", f"sha256:{C}")]}[name]

    monkeypatch.setattr(lock, "_index", lambda: FakeIndex())
    out = lock.lock_request(lock.LockRequest("q", d, "3.7"), runner=runner, python_exe=Path("/usr/bin/python3"),
                            aarch64=False)
    assert out.category == 2 and pdm_sets[-1] == ("six==1.16.0", "numpy==1.21.6")
    assert uv_locks == [False, True]  # uv took dataclasses 0.8 (Requires-Python <3.7) for 3.7: excluded, asked again
    text = (d / "pdm.lock").read_text()
    assert "numpy-1.21.6-cp37-cp37m-manylinux_2_12_x86_64.whl" in text and "numpy-1.21.6.zip" not in text
    assert lock.read_lock_versions(text) == {"numpy": "1.21.6", "six": "1.16.0"}
    assert lock.check_lock_dir(d) == []
    record = (d / "lock.toml").read_text()
    assert 'resolver = "uv"' in record and "pdm refused the same requirement set" in record


def test_lock_request__the_dummy_beside_the_real_distribution__dropped_not_duplicated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """severson-battery (corpus6 dev): requirements.txt lists both sklearn and scikit-learn==0.24.2.
    The rename of the dummy made a second scikit-learn requirement, which the generator merged, so
    the written pyproject was not what was locked and the lock was refused. With the real name
    already required, the alias is dropped."""
    spec = _init_sub(tmp_path, monkeypatch, "import sklearn\nimport numpy\n", "sklearn\nscikit-learn==0.24.2\nnumpy\n")
    req = lock.LockRequest.from_spec(spec)
    seen: list[tuple[str, ...]] = []
    runner = _pdm_not_finding("sklearn", "sklearn", seen, Completed((), 0, "sklearn (0.0)\nAvailable versions: 0.0\n", ""))
    answer_uv_compile(runner)
    assert "sklearn" in lock.read_pyproject(req.project_dir / "pyproject.toml")["project"]["dependencies"]
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"), persist=lock.persist_to_model_toml)
    assert out.category == 2 and [(s.rule, s.after) for s in out.steps] == [("rename", "")]
    assert sorted(seen[-1]) == ["numpy", "scikit-learn==0.24.2"]
    assert lock.check_lock_dir(req.project_dir) == []


PANDAS_INVALID = """pdm.termui: Invalid metadata in pandas@{v}: pytz (>=2011k): Expected matching RIGHT_PARENTHESIS for LEFT_PARENTHESIS, after version specifier
pdm.termui: Candidate rejected because it contains invalid metadata: pandas@{v}
pdm.termui: Conflicts detected: 
Traceback (most recent call last):
  File "/x/lib/python3.11/site-packages/pdm/resolver/resolvelib.py", line 40, in resolve
    raise ResolutionError("Unable to find a resolution") from None
pdm.exceptions.ResolutionError: Unable to find a resolution
"""


def test_lock_request__pinned_release_with_metadata_that_no_longer_parses__next_releases_until_one_does(
        tmp_path: Path) -> None:
    """delinker (corpus8, 2019): pandas 0.23.4 declares "pytz (>=2011k)", which today's parsers
    refuse; pdm passes the release over and says only "Unable to find a resolution" (the reason is
    in its log). The pin moves one release up at a time (rule valid-metadata) until one parses:
    0.24.0 does not either, 0.24.1 does."""
    d = _project(tmp_path, ["numpy==1.15.4", "pandas==0.23.4"])
    seen: list[tuple[str, ...]] = []

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        deps = lock.read_pyproject(Path(argv[argv.index("-p") + 1]) / "pyproject.toml")["project"]["dependencies"]
        bad = next((x.split("==")[1] for x in deps if x in ("pandas==0.23.4", "pandas==0.24.0")), None)
        if bad is None:
            return _pdm_failing_while(lambda deps: False, seen, "")(argv, cwd, env)
        if "--append" not in argv:
            seen.append(tuple(deps))
        return Completed(tuple(argv), 1, "", PANDAS_INVALID.format(v=bad))

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on([lock.sys.executable, "-m", "pip", "index"],
              "pandas (0.25.3)\nAvailable versions: 0.25.3, 0.24.2, 0.24.1, 0.24.0, 0.23.4, 0.23.3\n")
    runner.on([lock.sys.executable, "-c"], Completed((), 0, "\n", ""))
    out = lock.lock_request(lock.LockRequest("p", d, "3.11"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2, [a.error for a in out.attempts]
    assert [s.rule for s in out.steps] == ["valid-metadata", "valid-metadata"]
    assert seen[-1] == ("numpy==1.15.4", "pandas==0.24.1")
    from pyrepro import lockplan

    assert "valid-metadata" in lockplan.UNCOUNTED_RULES  # forced moves leave the step limit to the others
    assert "metadata does not parse today" in out.steps[0].reason
    assert "invalid metadata: pandas@0.23.4" in out.attempts[0].error


def test_relax__invalid_metadata__pip_uv_words_and_ranges() -> None:
    from pyrepro import relax

    uv = ("error: No solution found when resolving dependencies cause: Because pandas==0.23.4 has invalid metadata "
          "and you require pandas==0.23.4, we can conclude that your requirements are unsatisfiable.")
    probs = relax.diagnose(uv)
    assert probs[0].kind == "invalid-metadata" and probs[0].requirements == ("pandas==0.23.4",)
    facts = relax.Facts(versions={"pandas": ("0.23.4", "0.24.0rc1", "0.24.0")})
    step = relax.relax(uv, ["pandas==0.23.4"], facts)
    assert step is not None and step.after == "pandas==0.24.0"  # no pre-release
    ranged = relax.relax(uv, ["pandas>=0.20"], facts)
    assert ranged is not None and ranged.after == "pandas>=0.20,!=0.23.4"
    assert relax.relax(uv, ["pandas>=0.20,!=0.23.4"], facts) is None  # excluded already: nothing more
    dep = relax.relax(uv, ["matplotlib==3.0.2"], facts)
    assert dep is not None and dep.before == "" and dep.after == "pandas!=0.23.4"


UV_TRITON_HIDDEN = (
    "  x No solution found when resolving dependencies:\n"
    "  `-> Because there is no version of triton{platform_machine == 'x86_64' and sys_platform == 'linux'}==2.0.0\n"
    "      and torch==2.0.0 depends on triton{platform_machine == 'x86_64' and sys_platform == 'linux'}==2.0.0, we\n"
    "      can conclude that torch==2.0.0 cannot be used.\n"
    "      And because you require torch==2.0.0, we can conclude that your requirements are unsatisfiable.\n")


def test_lock_request__a_dependency_release_after_the_date_bound__uv_names_it_the_bound_moves(
        tmp_path: Path) -> None:
    """rul-etsformer (corpus10 held): torch==2.0.0+cu118 on 3.8, dated 2022-09. The bound moved to
    the day after torch 2.0.0's upload (2023-03-16), but torch 2.0.0 needs triton==2.0.0, whose
    wheels came on 2023-03-20; pdm only said it could not find triton, and no rule acted on that.
    uv's explanation names triton==2.0.0: the bound moves past its upload and the lock is made."""
    d = _project(tmp_path, ["numpy", "torch==2.0.0+cu118"])
    seen: list[tuple[tuple[str, ...], str]] = []
    uploads = {("torch", "2.0.0"): "2023-03-15", ("triton", "2.0.0"): "2023-03-20"}

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        proj = Path(argv[argv.index("-p") + 1])
        deps = tuple(lock.read_pyproject(proj / "pyproject.toml")["project"]["dependencies"])
        bound = argv[argv.index("--exclude-newer") + 1] if "--exclude-newer" in argv else ""
        if "--append" not in argv:
            seen.append((deps, bound))
        if any("+cu118" in x for x in deps) or (bound and bound < "2023-03-16"):
            return Completed(tuple(argv), 1, "", "ERROR: Unable to find a resolution for torch\n"
                                                 "Please make sure the package name is correct.\n")
        if bound and bound < "2023-03-21":
            return Completed(tuple(argv), 1, "", "ERROR: Unable to find a resolution for triton\n"
                                                 "Please make sure the package name is correct.\n")
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    def upload(argv, cwd, env):  # type: ignore[no-untyped-def]
        return Completed(tuple(argv), 0, uploads.get((argv[-3], argv[-2]), "") + "\n", "")

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on([lock.sys.executable, "-m", "pip", "index"], "triton (2.1.0)\nAvailable versions: 2.1.0, 2.0.0\n")
    runner.on([lock.sys.executable, "-c"], upload)
    answer_uv_compile(runner, stderr=UV_TRITON_HIDDEN)
    req = lock.LockRequest("p", d, "3.8", submitted=dt.date(2022, 9, 16))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2, out.message
    assert seen[-1] == (("numpy", "torch==2.0.0"), "2023-03-21")
    assert any("triton==2.0.0" in m and "2023-03-20" in m and "uv's resolver named it" in m for m in out.fidelity)
    assert lock.check_lock_dir(d) == []


# --------------------------------------------------------------------------- uv first (pyrepro reproduce)

_SIX = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"


class _SixIndex:
    def requires_python(self, name: str, version: str) -> str | None:
        return None

    def file_hashes(self, name: str, version: str) -> list[tuple[str, str]]:
        return [("six-1.17.0-py2.py3-none-any.whl", f"sha256:{_SIX}"), ("six-1.17.0.tar.gz", f"sha256:{'e' * 64}")]


def _uv_first_runner(uv_says: Completed, pdm_runs: list[list[str]]) -> FakeRunner:
    """uv pip compile answers ``uv_says``; pdm locks six 1.17.0 (and counts its runs)."""
    from pyrepro.uvtool import uv_executable

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        if "--append" in argv:  # the aarch64 target, added to a lock made
            return Completed(tuple(argv), 0, "", "")
        pdm_runs.append(list(argv))
        proj = Path(argv[argv.index("-p") + 1])
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    r = FakeRunner()
    r.on((uv_executable() or "uv", "pip", "compile"), lambda argv, cwd, env: replace_argv(uv_says, argv))
    r.on(lock.pdm_command(), pdm)
    return r


def replace_argv(done: Completed, argv: tuple[str, ...]) -> Completed:
    return Completed(tuple(argv), done.returncode, done.stdout, done.stderr)


def test_lock_request__uv_first__uv_resolves__the_lock_is_uvs_pdm_never_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyrepro reproduce locks from uv's resolution first (corpus11: uv locked in 4-18 s the sets pdm
    took 70-240 s over). The lock names the files uv gave hashes for, passes pdm's check, and the
    record says it is uv's, for one target, and how to get pdm's lock for every target."""
    d = _project(tmp_path, ["six"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    pdm_runs: list[list[str]] = []
    runner = _uv_first_runner(Completed((), 0, f"six==1.17.0 \\\n    --hash=sha256:{_SIX}\n", ""), pdm_runs)
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"),
                            uv_first=True)
    assert out.ok and out.category == 1 and pdm_runs == []
    assert [a.ok for a in out.attempts] == [True]
    text = (d / "pdm.lock").read_text()
    assert "six-1.17.0-py2.py3-none-any.whl" in text and "six-1.17.0.tar.gz" not in text
    assert "uv first" in text.splitlines()[0]
    assert lock.check_lock_dir(d) == []
    record = (d / "lock.toml").read_text()
    assert 'resolver = "uv"' in record and lock.UV_FIRST_WHY in record and "pyrepro lock p" in record
    assert "pdm refused" not in record


def test_lock_request__uv_first__uv_cannot_build_metadata__pdm_locks_as_without_uv(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lpsda (corpus11): uv cannot build torch-cluster's metadata (its setup.py imports torch). That
    is no answer about the set: pdm locks it, and the record says pdm did."""
    d = _project(tmp_path, ["six"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    pdm_runs: list[list[str]] = []
    failed = Completed((), 1, "", "  x Failed to build `torch-cluster==1.6.3`\n  ModuleNotFoundError: No module "
                                  "named 'torch'\n")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_uv_first_runner(failed, pdm_runs),
                            python_exe=Path("/usr/bin/python3"), uv_first=True)
    assert out.ok and out.category == 1 and len(pdm_runs) == 1
    record = (d / "lock.toml").read_text()
    assert 'resolver = "pdm"' in record and lock.UV_FIRST_WHY not in record


def test_lock_request__uv_first__uv_finds_no_solution__that_is_the_attempts_answer_pdm_never_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What uv cannot resolve for this target pdm cannot lock for every target: uv's "No solution
    found" is the attempt's failure (the planner reads uv's words), and pdm is not asked."""
    d = _project(tmp_path, ["six==0.0.1"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    monkeypatch.setattr(lock, "lookup_versions", lambda names, python, runner: {n: () for n in names})
    pdm_runs: list[list[str]] = []
    none = Completed((), 1, "", "  x No solution found when resolving dependencies:\n  `-> Because there is no "
                                "version of six==0.0.1 and you require six==0.0.1, we can conclude that your "
                                "requirements are unsatisfiable.\n")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_uv_first_runner(none, pdm_runs),
                            python_exe=Path("/usr/bin/python3"), uv_first=True)
    assert not out.ok and out.category == 4 and pdm_runs == []
    assert out.attempts and all(a.error.startswith("uv first: ") for a in out.attempts)
    assert "six" in out.attempts[0].error


def test_lock_request__without_uv_first__pdm_locks_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pyrepro lock`` (and ``reproduce --pdm``) keep pdm's lock for every target: uv is not asked
    for a small set that pdm locks."""
    d = _project(tmp_path, ["six"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    pdm_runs: list[list[str]] = []
    never = Completed((), 0, f"six==1.17.0 \\\n    --hash=sha256:{'0' * 64}\n", "")
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_uv_first_runner(never, pdm_runs),
                            python_exe=Path("/usr/bin/python3"))
    assert out.ok and len(pdm_runs) == 1 and 'resolver = "pdm"' in (d / "lock.toml").read_text()


def test_lock_request__uv_builds_sdist_metadata_with_the_targets_own_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """molecule-chef (corpus11, 3.6): uv built absl-py 0.8.1's metadata with CPython 3.11, whose
    setup.py refused it, so uv gave no answer. uv now runs with the target's own interpreter."""
    d = _project(tmp_path, ["six"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    monkeypatch.setattr(lock, "find_python", lambda version: Path(f"/opt/cpython-{version}/bin/python"))
    runner = _uv_first_runner(Completed((), 0, f"six==1.17.0 \\\n    --hash=sha256:{_SIX}\n", ""), [])
    lock.lock_request(lock.LockRequest("p", d, "3.6"), runner=runner, python_exe=Path("/usr/bin/python3"),
                      uv_first=True)
    argv = runner.calls[0][0]
    assert argv[argv.index("--python") + 1] == "/opt/cpython-3.6/bin/python"
    assert argv[argv.index("--python-version") + 1] == "3.6.8"  # the lock's floor: uv reads "3.6" as 3.6.0


@pytest.mark.integration
def test_uv_guide__real_index__an_old_sdists_metadata_built_on_the_target_python(tmp_path: Path) -> None:
    """absl-py 0.8.1 (an sdist only) builds its metadata on CPython 3.6 (network)."""
    from pyrepro import uvtool

    try:
        py = lock.find_python("3.6")
    except Exception:
        pytest.skip("no CPython 3.6 here")
    g = uvtool.guide(["absl-py==0.8.1"], "3.6", None, runner=proc.run, cache=tmp_path / "uv", interpreter=str(py))
    assert g.ok and g.version("absl-py") == "0.8.1", g.error


def test_lock_request__uv_first__a_long_no_solution_explanation__still_uvs_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scgen (corpus12 dev): uv's "No solution found" headed an explanation of over 2000 characters;
    the text was cut to its tail, so the answer read as "uv could not answer" and pdm ran."""
    d = _project(tmp_path, ["six==0.0.1"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    monkeypatch.setattr(lock, "lookup_versions", lambda names, python, runner: {n: () for n in names})
    pdm_runs: list[list[str]] = []
    long = "  x No solution found when resolving dependencies:\n" + "".join(
        f"  |  Because scvi-tools=={i}.0 depends on six>={i} we can conclude that it cannot be used.\n"
        for i in range(60))
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=_uv_first_runner(Completed((), 1, "", long),
                                                                                       pdm_runs),
                            python_exe=Path("/usr/bin/python3"), uv_first=True)
    assert len(long) > 2000 and not out.ok and pdm_runs == []


UV_RDKIT_PYTHON = (
    "  x No solution found when resolving dependencies:\n"
    "  `-> Because the requested Python version (>=3.6.8) does not satisfy Python>=3.7 and numpy==1.20.0 depends on\n"
    "      Python>=3.7, we can conclude that numpy==1.20.0 cannot be used.\n"
    "      And because rdkit-pypi<=2020.9.5.2 depends on numpy==1.20 and you require rdkit-pypi==2020.9.5.2, we can\n"
    "      conclude that your requirements are unsatisfiable.\n")


def test_relax__a_pins_dependency_needs_a_newer_python__the_pin_moves_to_the_nearest_later_release() -> None:
    """retroxpert (corpus12 dev): rdkit-pypi 2020.9.5.2 (a nearest-release move from conda's rdkit
    2019.09.3) needs numpy==1.20, which needs Python 3.7; the stated Python is 3.6. uv said so and
    no rule read it. The pin moves to the nearest later release."""
    from pyrepro import relax

    probs = relax.diagnose(UV_RDKIT_PYTHON)
    need = [p for p in probs if p.kind == "pin-needs-python"]
    assert need and need[0].package == "rdkit-pypi"
    assert need[0].requirements == ("rdkit-pypi==2020.9.5.2", "rdkit-pypi<=2020.9.5.2")
    assert "numpy" in need[0].excerpt and ">=3.7" in need[0].excerpt
    assert relax.packages_to_look_up(probs, ["rdkit-pypi==2020.9.5.2"]) == ["rdkit-pypi"]
    facts = relax.Facts(versions={"rdkit-pypi": ("2020.9.5.2", "2021.3.1b1", "2021.3.1", "2021.3.2", "2022.9.5")})
    step = relax.relax(UV_RDKIT_PYTHON, ["numpy>=1.18,<2", "rdkit-pypi==2020.9.5.2"], facts)
    assert step is not None and step.rule == "release-for-python"
    assert step.requirements == ("numpy>=1.18,<2", "rdkit-pypi==2021.3.1")  # no pre-release
    # no later release: nothing; the project's own pin needing the newer Python: not this problem
    assert relax.relax(UV_RDKIT_PYTHON, ["rdkit-pypi==2020.9.5.2"],
                       relax.Facts(versions={"rdkit-pypi": ("2019.9.1", "2020.9.5.2")})) is None
    direct = ("  x No solution found when resolving dependencies:\n  `-> Because the requested Python version (>=3.6.8)"
              " does not satisfy Python>=3.7 and numpy==1.20.0 depends on Python>=3.7, we can conclude that\n"
              "      numpy==1.20.0 cannot be used. And because you require numpy==1.20.0, we can conclude that your"
              " requirements are unsatisfiable.\n")
    assert not [p for p in relax.diagnose(direct) if p.kind == "pin-needs-python"]


def test_relax__the_projects_own_requirement_needs_a_newer_python__not_found_for_this_python() -> None:
    """hydrodl (corpus14 dev): matplotlib==3.8.0 needs >=3.9 on a target of 3.7; stid: every release of
    apache-tvm needs >=3.10 on 3.9. uv says so; it had been diagnosed "unknown" ("no relaxation rule
    applies to unknown"). It is the requirement not found for this Python, with the exact pin, which
    ``direct_not_found`` hands to the repair planner (a release or a Python for it)."""
    from pyrepro import lockplan, relax

    pin = ("  x No solution found when resolving dependencies:\n  `-> Because the requested Python version (>=3.7.1) "
           "does not satisfy Python>=3.9 and matplotlib==3.8.0 depends on Python>=3.9, we can conclude that\n"
           "      matplotlib==3.8.0 cannot be used. And because only matplotlib<=3.8.0 is available and you require "
           "matplotlib==3.8.0, we can conclude that your requirements are unsatisfiable.\n")
    probs = relax.diagnose(pin)
    assert [(p.kind, p.package, p.requirements) for p in probs] == [("not-found", "matplotlib", ("matplotlib==3.8.0",))]
    assert "needs Python >=3.9" in probs[0].excerpt and ">=3.7.1" in probs[0].excerpt
    assert lockplan.direct_not_found(probs, ["numpy", "matplotlib==3.8.0"]) == [("matplotlib", "3.8.0",
                                                                                  "matplotlib==3.8.0")]
    bare = ("  x No solution found when resolving dependencies:\n  `-> Because the requested Python version (>=3.9) "
            "does not satisfy Python>=3.10 and apache-tvm==0.25.0rc0 depends on Python>=3.10, we can conclude that "
            "apache-tvm==0.25.0rc0 cannot be used. And because only apache-tvm==0.25.0rc0 is available and you "
            "require apache-tvm, we can conclude that your requirements are unsatisfiable.\n")
    assert [(p.kind, p.package, p.requirements) for p in relax.diagnose(bare)] == [("not-found", "apache-tvm", ())]
    # a dependency's Python, not the project's own requirement: still the other problem
    assert [p.kind for p in relax.diagnose(UV_RDKIT_PYTHON)] == ["pin-needs-python"]


def test_relax__uv_no_project_in_the_registry__not_found_not_unknown() -> None:
    """neural-holography (corpus14 held): FLIR's PyCapture2 is no PyPI project; uv says "pycapture2 was
    not found in the package registry", which had been diagnosed "unknown"."""
    from pyrepro import relax

    text = ("  x No solution found when resolving dependencies:\n  `-> Because pycapture2 was not found in the package"
            " registry and you require pycapture2==2.13.61, we can conclude that your requirements are\n"
            "      unsatisfiable.\n")
    assert [(p.kind, p.package) for p in relax.diagnose(text)] == [("not-found", "pycapture2")]
    # equidock (corpus14 held): its README lists import names ("ot==0.7.0"); ot is POT's module, so
    # the not-found name is renamed to its distribution
    ot = text.replace("pycapture2", "ot").replace("2.13.61", "0.7.0")
    step = relax.relax(ot, ("ot==0.7.0", "numpy"))
    assert step is not None and (step.rule, step.after) == ("rename", "pot==0.7.0")


def test_relax__uv_requirement_filtered_out_by_the_date_bound__not_found_and_a_bound_of_its_own() -> None:
    """hifi-gan (corpus15 held, after the bundled-library move held soundfile to >=0.12.0 under a
    2020 bound): uv says only soundfile<=0.10.3.post1 is available, and that soundfile was filtered by
    exclude-newer. That had been "unknown", and the requirement was dropped as unimported; it is
    not-found, so the plan gives soundfile a bound of its own."""
    import datetime as dt

    from pyrepro import lockplan, relax

    text = ("error: No solution found when resolving dependencies\n  cause: Because only soundfile<=0.10.3.post1 is "
            "available and you require soundfile>=0.12.0, we can conclude that your requirements are unsatisfiable.\n"
            "hint: `soundfile` was filtered by `exclude-newer` to only include packages uploaded before "
            "2020-02-04T00:00:00Z. The latest version satisfying the requirement is v0.14.0, published at "
            "2026-06-06T08:58:33.269Z. Consider using `exclude-newer-package` to override the cutoff for this package.")
    assert [(p.kind, p.package) for p in relax.diagnose(text)] == [("not-found", "soundfile")]
    sit = lockplan.start(("librosa", "soundfile>=0.12.0"), first="date-bounded", era_bound="2020-02-04",
                         per_package=True)
    m = lockplan.next_move(sit)
    sit = sit.after(m, lockplan.Tried(m.strategy, m.requirements, m.bound, False,  # type: ignore[union-attr,arg-type]
                                      relax.diagnose(text), text, resolver="uv"))
    sit = sit.learn(uploaded={("soundfile", ">=0.12.0"): dt.date(2023, 2, 15)})
    own = lockplan.next_move(sit)
    assert isinstance(own, lockplan.Try) and own.package_bounds == (("soundfile", "2023-02-16"),)


def test_lock_request__uv_first__a_pins_dependency_needs_a_newer_python__relocks_with_a_later_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through lock_request, uv first (as reproduce locks): uv's explanation is read, the pin moves
    to the nearest later release, and the next uv attempt locks."""
    d = _project(tmp_path, ["six==1.15.0"])
    monkeypatch.setattr(lock, "_index", lambda: _SixIndex())
    monkeypatch.setattr(lock, "lookup_versions",
                        lambda names, python, runner: {n: ("1.14.0", "1.15.0", "1.17.0") for n in names})
    asked: list[str] = []

    def uv(argv, cwd, env):  # type: ignore[no-untyped-def]
        reqs = " ".join(Path(a).read_text() for a in argv if a.endswith((".in", ".txt")) and Path(a).is_file())
        asked.append(reqs)
        if "six==1.15.0" in reqs:
            return Completed(tuple(argv), 1, "", UV_RDKIT_PYTHON.replace("rdkit-pypi", "six").replace(
                "2020.9.5.2", "1.15.0"))
        return Completed(tuple(argv), 0, f"six==1.17.0 \\\n    --hash=sha256:{_SIX}\n", "")

    runner = FakeRunner()
    from pyrepro.uvtool import uv_executable

    runner.on((uv_executable() or "uv", "pip", "compile"), uv)
    pdm_runs: list[list[str]] = []
    runner.on(lock.pdm_command(), lambda argv, cwd, env: (pdm_runs.append(list(argv)), Completed(tuple(argv), 1, "", ""))[1])
    out = lock.lock_request(lock.LockRequest("p", d, "3.6"), runner=runner, python_exe=Path("/usr/bin/python3"),
                            uv_first=True)
    assert out.ok, out.message
    assert any(s.rule == "release-for-python" and s.after == "six==1.17.0" for s in out.steps)
    assert pdm_runs == [] and len(asked) == 2


def test_relax__invalid_metadata__pin_spelled_shorter_than_the_rejected_release__moves_up() -> None:
    """aieconomist (corpus17 held, studied after its measurement): requirements.txt pins gym==0.21,
    and uv rejects gym 0.21.0 for metadata that does not parse today. The pin is that very release
    (0.21 == 0.21.0), so it moves to the next release; comparing spellings had added !=0.21.0 to
    ==0.21, a requirement nothing satisfies, and the lock stopped."""
    from pyrepro import relax

    uv = ("error: No solution found when resolving dependencies cause: Because gym==0.21.0 has invalid metadata "
          "and you require gym==0.21.0, we can conclude that your requirements are unsatisfiable.")
    facts = relax.Facts(versions={"gym": ("0.20.0", "0.21.0", "0.22.0")})
    step = relax.relax(uv, ["gym==0.21", "numpy"], facts)
    assert step is not None and step.rule == "valid-metadata" and step.after == "gym==0.22.0", step
