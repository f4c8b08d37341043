"""Live progress: output streamed through the chokepoint, tool lines made into details, and the
terminal printer that shows them (issue 16)."""

from __future__ import annotations

import datetime as dt
import functools
import io
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pyrepro import lock, proc, reproduce, run
from pyrepro.backends import local
from pyrepro.cli import main
from pyrepro.cli._common import CliProgress, close_progress
from pyrepro.errors import ExternalToolError
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from pyrepro.progress import DETAIL_WIDTH, RecordingProgress, output_detail, shorten
from pyrepro.registry import load_registry
from tests.fakes import FakeRunner
from tests.test_lock import GOOD_LOCK, _project


@pytest.fixture(autouse=True)
def _pdm_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """These scenarios fake pdm's words: their reproductions lock with pdm first, as ``--pdm`` does
    (the uv-first lock has its own tests in tests/test_reproduce.py)."""
    from pyrepro import reproduce as _rep

    monkeypatch.setattr(_rep, "UV_FIRST", False)

PY = sys.executable
BACKEND = Path(__file__).parent / "scenarios" / "backend"


def _py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


# --------------------------------------------------------------------------- proc.run(on_line=...)

def test_run__on_line__every_line_in_order_while_running() -> None:
    seen: list[str] = []
    done = proc.run(_py("""
        import sys
        for i in range(200):
            print(f"line {i}")
            sys.stdout.flush()
        print("no newline at the end", end="")
    """), on_line=seen.append)
    assert seen == [f"line {i}" for i in range(200)] + ["no newline at the end"]
    assert done.returncode == 0


def test_run__on_line__each_stream_in_order_and_carriage_returns_end_lines() -> None:
    seen: list[str] = []
    proc.run(_py("""
        import sys
        for i in range(50):
            print(f"out {i}", flush=True)
            sys.stderr.write(f"err {i}\\n"); sys.stderr.flush()
        sys.stderr.write("\\r 10%|#\\r 50%|#####\\r100%|##########\\r\\n")
    """), on_line=seen.append)
    assert [s for s in seen if s.startswith("out")] == [f"out {i}" for i in range(50)]
    assert [s for s in seen if s.startswith("err")] == [f"err {i}" for i in range(50)]
    assert [s for s in seen if "%|" in s] == [" 10%|#", " 50%|#####", "100%|##########"]


@pytest.mark.parametrize("code", [
    pytest.param("print('a'); print('b', file=__import__('sys').stderr); raise SystemExit(3)", id="exit_code"),
    pytest.param("import sys; sys.stdout.write('x\\r\\ny\\rz\\n'); sys.stdout.buffer.write(b'\\xff\\xfe end\\n')",
                 id="newlines_and_bad_bytes"),
    pytest.param("import sys; sys.stdout.write('o' * 3_000_000); sys.stderr.write('e\\n' * 300_000)",
                 id="large_output_on_both_pipes"),
])
def test_run__on_line__completed_output_as_without_it(code: str) -> None:
    plain = proc.run([PY, "-c", code], check=False)
    lines: list[str] = []
    streamed = proc.run([PY, "-c", code], check=False, on_line=lines.append)
    assert (streamed.args, streamed.returncode, streamed.stdout, streamed.stderr) == \
        (plain.args, plain.returncode, plain.stdout, plain.stderr)
    assert sorted(lines) == sorted(plain.stdout.splitlines() + plain.stderr.splitlines())


def test_run__on_line_with_input__fed_and_streamed() -> None:
    lines: list[str] = []
    done = proc.run(_py("import sys; sys.stdout.write(sys.stdin.read().upper())"), input="abc\n" * 100_000,
                    on_line=lines.append)
    assert done.stdout == "ABC\n" * 100_000 and len(lines) == 100_000


def test_run__on_line_with_log_files__bytes_kept_and_lines_seen(tmp_path: Path) -> None:
    lines: list[str] = []
    code = "import sys; sys.stdout.buffer.write(b'step 1\\rstep 2\\r\\n\\xff'); sys.stderr.write('warn\\n')"
    with open(tmp_path / "out.log", "w") as so, open(tmp_path / "err.log", "w") as se:
        so.write("# header\n")
        done = proc.run([PY, "-c", code], stdout_file=so, stderr_file=se, on_line=lines.append)
    assert (done.stdout, done.stderr) == ("", "")
    assert (tmp_path / "out.log").read_bytes() == b"# header\nstep 1\rstep 2\r\n\xff"
    assert (tmp_path / "err.log").read_text() == "warn\n"
    assert sorted(lines) == sorted(["step 1", "step 2", "\ufffd", "warn"])


def test_run__on_line__timeout_kills_and_error_keeps_the_output() -> None:
    lines: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(ExternalToolError) as err:
        proc.run(_py("""
            import os, time
            print(f"pid {os.getpid()}", flush=True)
            time.sleep(120)
        """), timeout=1, on_line=lines.append)
    assert time.monotonic() - t0 < 60  # killed, not waited for
    exc = err.value
    assert exc.timeout == 1 and exc.returncode == -1
    assert "timed out after 1 s" in str(exc) and "pid " in str(exc)  # the tail of what it printed
    pid = int(lines[0].split()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_run__captured__timeout_error_keeps_the_output() -> None:
    with pytest.raises(ExternalToolError) as err:
        proc.run(_py("""
            import time
            print("resolving round 3", flush=True)
            time.sleep(120)
        """), timeout=1)
    assert err.value.timeout == 1 and "resolving round 3" in str(err.value)


def test_run__on_line_raises__program_stopped_and_error_propagates() -> None:
    def boom(line: str) -> None:
        raise RuntimeError(f"callback failed on {line!r}")

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="first"):
        proc.run(_py("""
            import time
            print("first", flush=True)
            time.sleep(120)
        """), on_line=boom)
    assert time.monotonic() - t0 < 60


def test_external_tool_error__failure__message_ends_with_the_output_tail() -> None:
    with pytest.raises(ExternalToolError) as err:
        proc.run(_py("""
            import sys
            for i in range(100):
                print(f"pip says {i}", file=sys.stderr)
            sys.exit(2)
        """))
    _head, tail = str(err.value).split("failed with exit code 2:\n")
    assert tail.splitlines() == [f"pip says {i}" for i in range(100 - ExternalToolError.TAIL_LINES, 100)]


# --------------------------------------------------------------------------- tool output -> details

def test_shorten__colour_codes_whitespace_and_length__one_plain_line() -> None:
    assert shorten("\x1b[32mCollecting\x1b[0m   torch==2.0.0\t ") == "Collecting torch==2.0.0"
    long = shorten("x" * 200)
    assert len(long) == DETAIL_WIDTH and long.endswith("…")


def test_output_detail__repeats_and_unsummarised_lines__not_reported() -> None:
    rec = RecordingProgress()
    on_line = output_detail(rec, "step", lambda ln: ln.upper() if ln.startswith("keep") else None)
    for line in ["keep a", "drop", "keep a", "keep b", "  "]:
        on_line(line)
    assert rec.events == [("advance", "step", "KEEP A"), ("advance", "step", "KEEP B")]


@pytest.mark.parametrize(("line", "detail"), [
    ("Collecting torch==2.0.0 (from -r /tmp/x/requirements.txt (line 3))", "Collecting torch==2.0.0"),
    ("  Downloading https://files.example/t/torch-2.0.0-cp310-cp310-manylinux1_x86_64.whl (619.9 MB)",
     "Downloading torch-2.0.0 (619.9 MB)"),
    ("  Using cached six-1.17.0-py2.py3-none-any.whl (11 kB)", "Using cached six-1.17.0 (11 kB)"),
    ("Processing /cache/alignn-2023.1.1.tar.gz", "Processing alignn-2023.1.1"),
    ("  Installing build dependencies: started", "Installing build dependencies"),
    ("  Building wheel for torch-scatter (setup.py): started", "Building wheel for torch-scatter"),
    ("Installing collected packages: six, torch, numpy", "Installing 3 collected packages"),
    ("Successfully installed numpy-1.24.4 six-1.17.0", "Successfully installed 2 packages"),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES", "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES"),
    ("  Stored in directory: /tmp/pip-ephem-wheel-cache/wheels/98", None),
])
def test_pip_detail__pip_lines__package_being_fetched_built_or_installed(line: str, detail: str | None) -> None:
    assert local.pip_detail(line) == detail


PIP_OUTPUT = "".join(f"Collecting pkg{i}==1.0 (from -r requirements.txt (line {i}))\n"
                     f"  Downloading pkg{i}-1.0-py3-none-any.whl (11 kB)\n" for i in range(300)) + \
    "Installing collected packages: " + ", ".join(f"pkg{i}" for i in range(300)) + "\n" + \
    "Successfully installed " + " ".join(f"pkg{i}-1.0" for i in range(300)) + "\n"


def _fake_pip(output: str = PIP_OUTPUT, returncode: int = 0, stderr: str = "") -> Any:
    """A runner: pip answers with canned output (line by line, as ``proc.run`` streams it), every
    other program really runs (the venv, the model)."""
    pip = FakeRunner().on([], output, returncode=returncode, stderr=stderr)

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        if [str(c) for c in cmd][1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif [str(c) for c in cmd][1:4] == ["-m", "pip", "install"]:
            return pip(cmd, **kw)
        return proc.run(cmd, **kw)

    return runner


@pytest.fixture
def world(tmp_path: Path) -> Paths:
    root = tmp_path / "root"
    shutil.copytree(BACKEND / "models", root / "models")
    shutil.copytree(BACKEND / "patches", root / "patches")
    (root / "flake.nix").write_text("{ }\n")
    return Paths(root=root, cache=tmp_path / "cache")


def test_build_env__pip_output__progress_names_each_package(world: Paths) -> None:
    spec = load_registry(world.models).get("mini")
    rec = RecordingProgress()
    local.build_env(spec, world, runner=_fake_pip(), progress=rec, platform="linux-x86_64")
    details = [d for kind, label, d in rec.events if kind == "advance" and label == "build mini env"]
    assert details[0] == "venv" and details[-1] == "installed"
    assert details[1:5] == ["Collecting pkg0==1.0", "Downloading pkg0-1.0 (11 kB)",
                            "Collecting pkg1==1.0", "Downloading pkg1-1.0 (11 kB)"]
    assert details[-3:-1] == ["Installing 300 collected packages", "Successfully installed 300 packages"]
    assert rec.events[-1] == ("finish", "build mini env", "1 packages")


def test_run_model__model_output__progress_shows_its_last_line(world: Paths) -> None:
    spec = load_registry(world.models).get("mini")
    rec = RecordingProgress()
    # pip installs nothing, so the model stops at 'import six': its last line is the detail
    record = run.run_model(spec, world, test=True, mirror=BACKEND / "mirror", runner=_fake_pip(""), progress=rec)
    assert record.data["exit_code"] != 0
    details = [d for kind, label, d in rec.events if kind == "advance" and label == "run mini"]
    assert "ModuleNotFoundError: No module named 'six'" in details
    assert (record.record_path.parent / "logs" / "stderr.log").read_text().rstrip().endswith(
        "ModuleNotFoundError: No module named 'six'")  # the log file still has everything


# pdm lock -v, as it prints (abridged from a real run)
PDM_VERBOSE = """\
pdm.termui: ======== Start resolving requirements ========
pdm.termui:   six==1.16.0
pdm.termui:   Adding requirement python==3.11.*
pdm.termui:   Adding requirement matplotlib==3.7.1
pdm.termui: ======== Starting round 0 ========
pdm.termui: Adding new pin: python None
pdm.termui: ======== Starting round 1 ========
unearth.preparer: Downloading <Link https://files.example/p/matplotlib-3.7.1-cp311-cp311-manylinux2014_x86_64.whl (from https://pypi.org/simple/matplotlib/)> (8.3 MB)
pdm.termui:   Adding requirement numpy>=1.20(from matplotlib 3.7.1)
pdm.termui: Adding new pin: matplotlib 3.7.1
pdm.termui: ======== Starting round 2 ========
pdm.termui: Candidate rejected: requests@2.29.0 because it introduces a new requirement urllib3<1.27 that conflicts with other requirements:
    urllib3>=2 (from project)
pdm.termui: Adding new pin: numpy 1.24.4
pdm.termui: ======== Resolution Result ========
pdm.termui:      numpy 1.24.4
pdm.termui: Fetching hashes for numpy@1.24.4
"""

PDM_VERBOSE_FAILURE = """\
pdm.termui: ======== Start resolving requirements ========
pdm.termui:   Adding requirement six<1.5
ERROR: Unable to find a resolution for six
because of the following conflicts:
  six<1.5 (from project)
  six==1.16.0 (from project)
To fix this, you could loosen the dependency version constraints in pyproject.toml.
Traceback (most recent call last):
  File "/venv/bin/pdm", line 8, in <module>
    sys.exit(main())
             ^^^^^^
  File "/venv/lib/python3.11/site-packages/pdm/cli/actions.py", line 164, in do_lock
    raise ResolutionError("Unable to find a resolution") from None
pdm.exceptions.ResolutionError: Unable to find a resolution
"""


def test_resolver_detail__pdm_verbose_output__round_pins_and_current_step() -> None:
    summarise = lock.ResolverDetail()
    details = [d for d in map(summarise, PDM_VERBOSE.splitlines()) if d is not None]
    assert details == [
        "round 0, 0 pinned: requirement python==3.11.*",
        "round 0, 0 pinned: requirement matplotlib==3.7.1",
        "round 0, 0 pinned",
        "round 0, 1 pinned: pin python None",
        "round 1, 1 pinned",
        "round 1, 1 pinned: download matplotlib-3.7.1 (8.3 MB)",
        "round 1, 1 pinned: requirement numpy>=1.20 (from matplotlib 3.7.1)",
        "round 1, 2 pinned: pin matplotlib 3.7.1",
        "round 2, 2 pinned",
        "round 2, 2 pinned: rejected requests@2.29.0",
        "round 2, 3 pinned: pin numpy 1.24.4",
        "resolved: 3 pinned in 2 rounds",
        "fetching hashes: numpy@1.24.4",
    ]
    assert summarise("pdm.termui: Adding new pin: numpy 1.24.3") == "round 2, 3 pinned: pin numpy 1.24.3"  # backtracked
    assert summarise("ERROR: Unable to find a resolution for six") == "ERROR: Unable to find a resolution for six"


def test_quiet__verbose_failure__reads_as_pdm_without_v() -> None:
    assert lock._quiet(PDM_VERBOSE_FAILURE) == textwrap.dedent("""\
        ERROR: Unable to find a resolution for six
        because of the following conflicts:
          six<1.5 (from project)
          six==1.16.0 (from project)
        To fix this, you could loosen the dependency version constraints in pyproject.toml.
        [ResolutionError]: Unable to find a resolution""")
    assert lock._quiet(PDM_VERBOSE + "Changes are written to pdm.lock.\n") == "Changes are written to pdm.lock."


def test_quiet__build_output_quoted_by_pdm__its_traceback_stays() -> None:
    build_output = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/tmp/pdm-build-env-x/setup.py", line 3, in <module>
            import torch
        ModuleNotFoundError: No module named 'torch'""")
    verbose = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/venv/lib/python3.11/site-packages/pdm/builders/base.py", line 110, in log_subprocessor
            raise build_error(e) from None
        pdm.exceptions.BuildError: Build backend raised error: Showing the last 10 lines of the build output:
        """) + build_output + "\n"
    assert lock._quiet(verbose) == "[BuildError]: Build backend raised error: Showing the last 10 lines of the " \
        "build output:\n" + build_output


def _fake_pdm_verbose(fail_first: bool) -> FakeRunner:
    state = {"n": 0}

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        assert "-v" in argv
        state["n"] += 1
        if fail_first and state["n"] == 1:
            return Completed(tuple(argv), 1, "", PDM_VERBOSE_FAILURE)
        proj = Path(argv[argv.index("-p") + 1])
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "Changes are written to pdm.lock.\n", PDM_VERBOSE)

    return FakeRunner().on(lock.pdm_command(), pdm)


def test_lock_request__pdm_verbose_output__resolver_steps_as_details_record_as_without_v(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six"])
    rec = RecordingProgress()
    req = lock.LockRequest("p", d, "3.10", submitted=dt.date(2023, 1, 14))
    out = lock.lock_request(req, runner=_fake_pdm_verbose(fail_first=True), progress=rec,
                            python_exe=Path("/usr/bin/python3"), aarch64=False, start="as-declared")
    assert out.category == 2 and out.strategy == "date-bounded"
    details = [d for kind, label, d in rec.events if kind == "advance" and label == "lock p"]
    assert "ERROR: Unable to find a resolution for six" in details
    assert "round 2, 3 pinned: pin numpy 1.24.4" in details
    assert all(len(str(d)) <= DETAIL_WIDTH for d in details)
    failed = out.attempts[0]
    assert [p.kind for p in failed.problems] == ["conflict"] and failed.problems[0].package == "six"
    assert "pdm.termui" not in failed.error and "Traceback" not in failed.error
    # the record holds the resolver's own conflict message (relax.error_excerpt), nothing after it
    assert "Unable to find a resolution for six" in failed.error and "six==1.16.0 (from project)" in failed.error


# --------------------------------------------------------------------------- the terminal

class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cli_progress__not_a_tty__details_at_most_every_10_s(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    p = CliProgress(tty=False, clock=clock)
    p.start("lock alignn")
    for second in range(60):  # a resolver line every 0.1 s for a minute
        for tenth in range(10):
            clock.now = 1000.0 + second + tenth / 10
            p.advance("lock alignn", 0, f"round {second * 10 + tenth}")
    p.advance("lock alignn", 1, "date-bounded: pdm lock")  # a counted step is always shown
    clock.now = 1125.0
    p.finish("lock alignn", "category 2")
    assert capsys.readouterr().err.splitlines() == [
        "[start] lock alignn",
        "[....] lock alignn [10s] round 100",
        "[....] lock alignn [20s] round 200",
        "[....] lock alignn [30s] round 300",
        "[....] lock alignn [40s] round 400",
        "[....] lock alignn [50s] round 500",
        "[....] lock alignn [59s] date-bounded: pdm lock",
        "[done] lock alignn category 2 [2m05s]",
    ]


def test_cli_progress__not_a_tty__message_for_a_step_never_started_shown(capsys: pytest.CaptureFixture[str]) -> None:
    p = CliProgress(tty=False, clock=Clock())
    p.advance("build mini", 0, "restaging: the staged source was modified")
    assert capsys.readouterr().err == "[....] build mini restaging: the staged source was modified\n"


def _tty_progress() -> tuple[CliProgress, io.StringIO]:
    from rich.console import Console

    buf = io.StringIO()
    return CliProgress(tty=True, console=Console(file=buf, force_terminal=True, width=160, color_system=None)), buf


def test_cli_progress__tty__label_spinner_elapsed_and_detail_live() -> None:
    p, buf = _tty_progress()
    p.start("build alignn env", total=3)
    p.advance("build alignn env", 0, "Collecting torch[cuda]==2.0.0")  # brackets are text, not markup
    p.advance("build alignn env", 1)
    live = p._rich.tasks[0]
    assert (live.description, live.fields["detail"], live.completed) == \
        ("build alignn env", "Collecting torch[cuda]==2.0.0", 1)
    p.finish("build alignn env", "112 packages")
    assert p._rich is None  # the last step finished: the display ended
    last = buf.getvalue().replace("\r", "\n").splitlines()[-2]
    assert "✓ build alignn env" in last and "0:00:0" in last and last.rstrip().endswith("112 packages")


def test_close_progress__live_display__stopped_before_an_error_is_printed() -> None:
    p, buf = _tty_progress()
    p.start("lock alignn")
    assert p._rich is not None
    close_progress()
    assert p._rich is None and buf.getvalue().endswith("\x1b[?25h")  # the cursor is back
    p.advance("lock alignn", 0, "late line")  # a step left running stays silent


# --------------------------------------------------------------------------- commands

def test_build_cli__pip_prints_hundreds_of_lines__ci_log_gets_a_few(
        world: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    monkeypatch.setattr(local, "build", functools.partial(local.build, runner=_fake_pip()))
    assert main(["build", "mini", "--mirror", str(BACKEND / "mirror")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[start] build mini env (3)" and err[-1].startswith("[done] build mini env 1 packages [")
    pip_lines = [ln for ln in err if "pkg" in ln]
    # 600 lines in well under 10 s: at most one of them reaches the log
    assert len(pip_lines) <= 1 and len(err) <= 5


def test_build_cli__pip_fails__error_shows_the_tail_of_its_output(
        world: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    stderr = "".join(f"  detail {i}\n" for i in range(100)) + "ERROR: No matching distribution found for six\n"
    monkeypatch.setattr(local, "build", functools.partial(local.build, runner=_fake_pip("", 1, stderr)))
    assert main(["build", "mini", "--mirror", str(BACKEND / "mirror")]) == 11
    err = capsys.readouterr().err
    assert "error: installing the locked packages of mini failed" in err
    assert "  detail 99\nERROR: No matching distribution found for six" in err and "detail 50\n" not in err


def test_lock_cli__resolver_prints_hundreds_of_lines__ci_log_gets_a_few(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    d = _project(tmp_path, ["six"])
    verbose = PDM_VERBOSE + "".join(f"pdm.termui: Adding new pin: pkg{i} 1.0\n" for i in range(500))
    fake = FakeRunner().on(lock.pdm_command(), lambda argv, cwd, env: _locked(argv, verbose))
    monkeypatch.setattr(lock, "lock_request", functools.partial(lock.lock_request, runner=fake,
                                                                python_exe=Path("/usr/bin/python3")))
    assert main(["lock", "--project", str(d), "--python", "3.10", "--no-aarch64"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[start] lock proj" and err[-1].startswith("[done] lock proj category 1 (as-declared")
    assert len(err) <= 4  # start, the attempt, at most one resolver line, done


def _locked(argv: tuple[str, ...], stderr: str) -> Completed:
    proj = Path(argv[argv.index("-p") + 1])
    h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
    (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
    return Completed(tuple(argv), 0, "", stderr)



def test_run_cli__model_fails__the_end_of_its_stderr_shown(
        world: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYREPRO_ROOT", str(world.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(world.cache))
    monkeypatch.setattr(run, "run_model", functools.partial(run.run_model, runner=_fake_pip("")))
    assert main(["run", "mini", "--test", "--mirror", str(BACKEND / "mirror")]) == 12
    err = capsys.readouterr().err
    assert "mini: exit 1; the end of its stderr:\n" in err
    assert "  ModuleNotFoundError: No module named 'six'\nmini: logs in " in err


def test_reproduce__stages__each_started_step_finished_once(
        tmp_path: Path, write_files: Any, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    sub = write_files({"old_model/run.py": "import urllib2\nimport numpy\nprint 'done'\n"})
    rec = RecordingProgress()
    from pyrepro import lock
    from pyrepro.errors import ResolutionError

    def no_lock(spec, paths, **kw):  # type: ignore[no-untyped-def]
        raise ResolutionError("no lock for this test")

    monkeypatch.setattr(lock, "lock_model", no_lock)
    reproduce.reproduce(sub / "old_model", paths=Paths.discover(), online=False, progress=rec)
    assert [(kind, label, x) for kind, label, x in rec.events] == [
        ("start", "reproduce old_model: init", None), ("finish", "reproduce old_model: init", ""),
        ("start", "reproduce old_model: lock (Python 2.7)", None),
        ("finish", "reproduce old_model: lock (Python 2.7)", "failed")]
