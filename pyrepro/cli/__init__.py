"""The command line: a thin typer layer over the library.

Each command module (``pyrepro/cli/<group>.py``) defines ``register(app)``, parses
arguments, calls one library function and formats the result. Errors are turned into
exit codes only in ``main`` (table in ``pyrepro.errors``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import typer

from pyrepro.errors import PyreproError, exit_code_for

app = typer.Typer(
    name="pyrepro",
    help="Turn research-model submissions into reproducible, sandboxed, testable packages.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # `-h` as `--help`, on the root and (click's contexts inherit it) on every command and group
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state = {"verbose": 0}


@app.callback()
def _root(verbose: int = typer.Option(0, "--verbose", "-v", count=True,
                                      help="More output; -vv shows tracebacks")) -> None:
    _state["verbose"] = verbose
    logging.basicConfig(level=logging.DEBUG if verbose >= 2 else logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


def _register_all() -> None:
    from pyrepro.cli import batch, build, ci, data, doctor, export, graph, lock, patch, registry, reproduce, scan

    for mod in (scan, registry, reproduce, batch, ci, lock, patch, data, build, export, graph, doctor):
        mod.register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns (and exits with) the exit code from ``pyrepro.errors``. With
    ``--json``, stdout carries exactly one envelope (docs/json.md), errors included."""
    from pyrepro.cli._common import JSON_STATE, close_progress, error_json, print_json

    args = list(sys.argv[1:] if argv is None else argv)
    JSON_STATE.update(active="--json" in args, result=None, emitted=False)
    _terminate_cleanly()
    failure: dict[str, Any] | None = None
    _INTERRUPTED.clear()
    try:
        try:
            returned = app(args=argv, standalone_mode=False)
        finally:
            close_progress()  # before any error message: it must not land in a spinner line
        # typer turns Ctrl-C and SIGTERM (a KeyboardInterrupt) into a returned 130, not an
        # exception: an interrupted command must never end as a success
        if _INTERRUPTED or returned == 130:
            raise KeyboardInterrupt(_INTERRUPTED[-1] if _INTERRUPTED else "interrupted")
        code = returned if isinstance(returned, int) and not isinstance(returned, bool) else 0
    except PyreproError as exc:
        if _state["verbose"] >= 2:
            logging.exception("traceback")
        print(f"error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        code = exit_code_for(exc)
        failure = error_json(exc, code)
    except typer.Exit as exc:  # raised by commands to set an exit code
        code = int(exc.exit_code)
    except Exception as exc:  # click's usage errors and friends (typer may vendor click as typer._click)
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            code = exc.exit_code
            failure = {"code": code, "kind": "UsageError", "message": exc.format_message()
                       if hasattr(exc, "format_message") else str(exc), "hint": "see --help", "location": None}
        elif type(exc).__name__ == "Abort":
            code = 130
        elif isinstance(exc, OSError) and exc.filename:
            # a file the command could not read or write: located, never a traceback
            where = exc.filename
            print(f"error: {where}: {exc.strerror or exc}", file=sys.stderr)
            code = INPUT_ERROR
            failure = {"code": code, "kind": type(exc).__name__, "message": f"{where}: {exc.strerror or exc}",
                       "hint": "check the path and its permissions", "location": {"path": str(where), "line": None,
                                                                               "key": None}}
        else:
            code = INTERNAL_ERROR
            saved = _save_traceback(exc)
            print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
            print(f"the traceback is in {saved}; please report it with the command you ran", file=sys.stderr)
            failure = {"code": code, "kind": "InternalError", "message": f"{type(exc).__name__}: {exc}",
                       "hint": f"traceback saved in {saved}", "location": None}
    except BaseException as exc:
        code = _exit_of(exc)
        if code == 130:
            failure = {"code": 130, "kind": "Interrupted", "message": "interrupted", "hint": None, "location": None}
    finally:
        active = JSON_STATE["active"]
        JSON_STATE["active"] = False
    if active:
        ok = code == 0
        if failure is None and not ok:
            failure = {"code": code, "kind": "Error", "message": f"exit code {code}", "hint": None, "location": None}
        print_json({"ok": ok, "result": JSON_STATE["result"], "error": None if ok else failure})
    if argv is None:
        sys.exit(code)
    return code


def _terminate_cleanly() -> None:
    """SIGTERM (a job scheduler, `timeout`, a killed CI step) becomes KeyboardInterrupt, so every
    half-built folder is removed by the same cleanup as Ctrl-C instead of being left behind."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        _INTERRUPTED.append(f"signal {signum}")
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


#: The signals that interrupted the command (SIGINT, SIGTERM), whatever caught the
#: KeyboardInterrupt they raised on the way out.
_INTERRUPTED: list[str] = []


INPUT_ERROR = 3
INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in pyrepro, never a bare traceback


def _save_traceback(exc: BaseException) -> str:
    """Write the traceback of an unexpected error to the cache; return where (or a note)."""
    import datetime as dt
    import os
    import traceback

    from pyrepro.paths import cache_dir

    try:
        folder = cache_dir() / "crashes"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}.txt"
        path.write_text("pyrepro " + " ".join(sys.argv[1:]) + "\n\n" +
                        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        return str(path)
    except OSError:
        return "(not saved: the cache folder is not writable)"


def _exit_of(exc: BaseException) -> int:
    if isinstance(exc, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else 1
    raise exc
