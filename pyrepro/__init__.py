"""pyrepro: make published research models run again, reproducibly.

Pipeline stages (one module each): scan -> resolve -> registry/generate -> lock ->
patches -> build (backends) -> run -> verdict -> report, plus graph and gpu.
The CLI (``pyrepro.cli``) is a thin typer layer; nothing in the library imports typer.
"""

__version__ = "0.1.0"
