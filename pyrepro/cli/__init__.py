"""The command line: a thin typer layer over the library.

Each command module (``pyrepro/cli/<group>.py``) defines ``register(app)``, parses
arguments, calls one library function and formats the result. Errors are turned into
exit codes only in ``main`` (table in ``pyrepro.errors``).
"""

from __future__ import annotations

import logging
import sys

import typer

from pyrepro.errors import PyreproError, exit_code_for

app = typer.Typer(
    name="pyrepro",
    help="Turn research-model submissions into reproducible, sandboxed, testable packages.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"verbose": 0}


@app.callback()
def _root(verbose: int = typer.Option(0, "--verbose", "-v", count=True,
                                      help="More output; -vv shows tracebacks")) -> None:
    _state["verbose"] = verbose
    logging.basicConfig(level=logging.DEBUG if verbose >= 2 else logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


def _register_all() -> None:
    from pyrepro.cli import build, data, doctor, graph, lock, patch, registry, reproduce, scan

    for mod in (scan, registry, reproduce, lock, patch, data, build, graph, doctor):
        mod.register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns (and exits with) the exit code from ``pyrepro.errors``."""
    try:
        app(args=argv, standalone_mode=False)
        code = 0
    except PyreproError as exc:
        if _state["verbose"] >= 2:
            logging.exception("traceback")
        print(f"error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        code = exit_code_for(exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    except typer.Exit as exc:  # raised by commands to set an exit code
        code = exc.exit_code
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:  # click's usage errors and friends (typer may vendor click as typer._click)
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            code = exc.exit_code
        elif type(exc).__name__ == "Abort":
            code = 130
        else:
            raise
    if argv is None:
        sys.exit(code)
    return code
