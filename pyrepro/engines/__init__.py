"""Engines: where and when a batch's workers run (``pyrepro.batch.Engine``).

An engine takes a ``batch.Plan`` (the submissions still to do, with the options and the paths a
worker needs) and runs one worker per submission (``python -m pyrepro.engines.worker task PLAN
INDEX``: a reproduction in a process of its own, its result in ``tasks/<index>.json``). It never
schedules beyond that: the local engine is a fixed pool of ``jobs`` workers on this machine, the
SLURM engine writes a job array and lets SLURM schedule it. A new engine is one module and one
entry in ``ENGINES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyrepro.batch import Engine
from pyrepro.errors import UsageError


def _local(**kw: Any) -> Engine:
    from pyrepro.engines.local import LocalEngine

    return LocalEngine(**kw)


def _slurm(**kw: Any) -> Engine:
    from pyrepro.engines.slurm import SlurmEngine

    return SlurmEngine(**kw)


#: name -> factory taking the engine's own keyword options (``jobs``; SLURM's ``wait``, ``sbatch_args``)
ENGINES: dict[str, Callable[..., Engine]] = {"local": _local, "slurm": _slurm}


def engine(name: str, **kw: Any) -> Engine:
    """The engine ``name`` built with ``kw`` (options an engine does not take are an error)."""
    try:
        factory = ENGINES[name]
    except KeyError:
        raise UsageError(f"no engine {name!r}", hint=f"the engines are {', '.join(ENGINES)}") from None
    return factory(**kw)
