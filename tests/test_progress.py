"""Live progress: output streamed through the chokepoint, tool lines made into details, and the
terminal printer that shows them (issue 16)."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pyrepro import proc
from pyrepro.errors import ExternalToolError

PY = sys.executable


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
