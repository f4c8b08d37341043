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


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each command line, with backslash continuations joined
    (``pip install \\`` then one requirement a line, as install scripts and Dockerfiles write them)."""
    out: list[tuple[int, str]] = []
    start, parts = 0, []
    for n, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = n
        stripped = raw.rstrip()
        if stripped.endswith("\\") and not stripped.lstrip().startswith("#"):
            parts.append(stripped[:-1])
            continue
        if parts and stripped.lstrip().startswith("#"):
            continue  # a comment between continued lines (Docker allows it)
        parts.append(raw)
        out.append((start, " ".join(p.strip() for p in parts)))
        parts = []
    if parts:
        out.append((start, " ".join(p.strip() for p in parts)))
    return out


def is_dockerfile(name: str) -> bool:
    """A Dockerfile by its name (``Dockerfile``, ``Dockerfile.gpu``, ``cpu.dockerfile``)."""
    lower = name.lower()
    return lower == "dockerfile" or lower.startswith("dockerfile.") or lower.endswith(".dockerfile")


_DOCKER_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$")


def dockerfile_script(text: str) -> str:
    """A Dockerfile's commands as a shell script with the same line numbers: each ``RUN`` (shell
    form, or the exec form's words joined) and each shell-form ``CMD``/``ENTRYPOINT`` on the line
    its instruction starts; every other line blank. Its ``pip install`` and ``conda install``
    lines are then read as a shell script's are: a Dockerfile-only repository declares its
    packages there."""
    import json

    lines = [""] * len(text.splitlines())
    for n, line in logical_lines(text):
        m = _DOCKER_INSTRUCTION.match(line)
        if not m or m.group(1).upper() not in ("RUN", "CMD", "ENTRYPOINT"):
            continue
        body = m.group(2).strip()
        if body.startswith("["):
            try:
                words = json.loads(body)
            except ValueError:
                continue
            body = " ".join(str(w) for w in words) if isinstance(words, list) else ""
            if body.split()[:1] in (["/bin/sh"], ["sh"], ["/bin/bash"], ["bash"]) and " -c " in f" {body} ":
                body = body.split(" -c ", 1)[1]
        lines[n - 1] = body
    return "\n".join(lines) + "\n"


def scan_shell(text: str) -> ShellScan:
    commands: list[ShellCommand] = []
    entries: list[tuple[str, str, int]] = []
    slurm = False
    for n, raw in logical_lines(text):
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
    if lower.endswith((".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")) or is_dockerfile(name):
        return True
    return head.startswith(b"#!") and any(s in head.split(b"\n", 1)[0] for s in (b"sh", b"bash"))
