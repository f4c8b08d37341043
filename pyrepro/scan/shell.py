"""Commands of shell entry points (``run.sh``, ``run.bash``, SLURM job scripts).

Records what a script runs, so later stages know the entry point and the runtime tools:
``python X.py`` / ``python3 X.py`` / ``ipython X.py`` (entry points), ``pip install``,
``conda activate``, ``git clone``, ``wget``, ``curl``, ``zip``, ``module load``, ``srun``...
``#SBATCH`` lines mark a SLURM script. It never runs anything.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

TOOLS = {"python", "python2", "python3", "ipython", "pip", "pip3", "conda", "mamba", "git", "wget", "curl",
         "zip", "unzip", "tar", "module", "srun", "sbatch", "mpirun", "nvidia-smi", "jupyter", "bash", "sh",
         "rm", "cp", "mv", "mkdir", "cd", "source", ".", "export", "echo", "nohup", "time", "eval"}
BUILTINS = {"cd", "source", ".", "export", "echo", "eval", "set", "unset", "time", "nohup", "exec", "if", "then",
            "fi", "for", "do", "done", "while", "case", "esac", "else", "elif", "true", "false", "exit", "wait"}


@dataclass(frozen=True)
class ShellCommand:
    tool: str
    argv: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class ShellScan:
    commands: tuple[ShellCommand, ...]
    entry_points: tuple[tuple[str, str, int], ...]  # (interpreter, script, line)
    slurm: bool


_PLAIN = re.compile(r"[;&|]+|[^\s;&|]+")


def _split(line: str) -> list[list[str]]:
    if not any(c in line for c in "'\"\\#"):  # nothing for shlex to interpret: the same tokens, directly
        toks = _PLAIN.findall(line)
    else:
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lex.whitespace_split = True
            toks = list(lex)
        except ValueError:
            toks = line.split()
    groups: list[list[str]] = [[]]
    for t in toks:
        if t and set(t) <= set(";&|"):
            groups.append([])
        else:
            groups[-1].append(t)
    return [g for g in groups if g]


# Words that start a simple command before the real tool (``do python x.py``, ``VAR=1 python``).
_LEADING = {"nohup", "time", "exec", "sudo", "do", "then", "else", "elif", "if", "while", "until", "!", "{", "(",
            "command", "builtin"}
# Launchers: recorded themselves, and the command they launch (after their options) too.
LAUNCHERS = {"srun", "mpirun", "mpiexec", "env", "timeout", "nice", "ionice", "stdbuf", "taskset", "numactl",
             "xvfb-run", "singularity", "apptainer", "conda", "mamba", "micromamba", "uv", "poetry", "pdm", "pipenv",
             "xargs"}
_RUNNERS = {"conda", "mamba", "micromamba", "uv", "poetry", "pdm", "pipenv"}  # only with their 'run' subcommand
_LAUNCHED = re.compile(r"^(?:.*/)?(i?python[\d.]*|jupyter|papermill|bash|sh|zip|pip[\d.]*)$")


@functools.lru_cache(maxsize=8192)
def command_tools(cmd: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(tool, argv) of each simple command in a command line (for os.system strings too).

    Leading keywords and assignments are skipped (``do``, ``VAR=1``); launchers (``srun -n 1
    python x.py``, ``conda run -n env python x.py``, ``/usr/bin/env python3 x.py``) give both the
    launcher and the launched command; ``python -m pip install x`` gives ``python`` and ``pip``."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for argv in _split(cmd):
        i = 0
        while i < len(argv) and (re.match(r"^[A-Za-z_]\w*=", argv[i]) or argv[i] in _LEADING):
            i += 1
        if i >= len(argv):
            continue
        tool = argv[i].rsplit("/", 1)[-1]
        out.append((tool, tuple(argv[i:])))
        if tool in LAUNCHERS and not (tool in _RUNNERS and "run" not in argv[i + 1:i + 3]):
            j = next((k for k in range(i + 1, len(argv)) if _LAUNCHED.match(argv[k])), None)
            if j is not None:
                i, tool = j, argv[j].rsplit("/", 1)[-1]
                out.append((tool, tuple(argv[j:])))
        if re.fullmatch(r"python[\d.]*", tool) and argv[i + 1:i + 2] == ["-m"] and len(argv) > i + 2 and \
                argv[i + 2] in ("pip", "pip3", "conda"):
            out.append((argv[i + 2], tuple(argv[i + 2:])))
    return tuple(out)  # memoised: callers must not mutate it


def _script_of(argv: tuple[str, ...]) -> str | None:
    """The script a ``python ...`` command runs: the first argument after the interpreter's own
    options (``-u``, ``-W ignore``, ``-X dev``); None for ``-c``/``-m`` or a non-Python file."""
    k = 1
    while k < len(argv) and argv[k].startswith("-"):
        if argv[k] in ("-c", "-m") or argv[k] == "-":
            return None
        k += 2 if argv[k] in ("-W", "-X", "--check-hash-based-pycs") else 1
    if k < len(argv) and argv[k].endswith((".py", ".ipynb")):
        return argv[k]
    return None


def scan_shell(text: str) -> ShellScan:
    commands: list[ShellCommand] = []
    entries: list[tuple[str, str, int]] = []
    slurm = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#SBATCH") or line.startswith("#PBS"):
            slurm = True
            continue
        if not line or line.startswith("#"):
            continue
        for tool, argv in command_tools(line):
            if tool in BUILTINS and tool not in ("source", "."):
                continue
            commands.append(ShellCommand(tool, argv, n))
            if re.fullmatch(r"(i?python)(\d(\.\d+)?)?", tool):
                script = _script_of(argv)
                if script:
                    entries.append(("ipython" if tool.startswith("ipython") else "python", script, n))
    return ShellScan(tuple(commands), tuple(entries), slurm)


def is_shell_file(name: str, head: bytes) -> bool:
    lower = name.lower()
    if lower.endswith((".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")):
        return True
    return head.startswith(b"#!") and any(s in head.split(b"\n", 1)[0] for s in (b"sh", b"bash"))
