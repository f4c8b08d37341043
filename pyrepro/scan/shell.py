"""Commands of shell entry points (``run.sh``, ``run.bash``, SLURM job scripts).

Records what a script runs, so later stages know the entry point and the runtime tools:
``python X.py`` / ``python3 X.py`` / ``ipython X.py`` (entry points), ``pip install``,
``conda activate``, ``git clone``, ``wget``, ``curl``, ``zip``, ``module load``, ``srun``...
``#SBATCH`` lines mark a SLURM script. It never runs anything.
"""

from __future__ import annotations

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


def _split(line: str) -> list[list[str]]:
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


def command_tools(cmd: str) -> list[tuple[str, tuple[str, ...]]]:
    """(tool, argv) of each simple command in a command line (for os.system strings too)."""
    out = []
    for argv in _split(cmd):
        i = 0
        while i < len(argv) and (re.match(r"^\w+=", argv[i]) or argv[i] in ("nohup", "time", "exec", "sudo")):
            i += 1
        if i < len(argv):
            tool = argv[i].rsplit("/", 1)[-1]
            out.append((tool, tuple(argv[i:])))
    return out


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
                script = next((a for a in argv[1:] if a.endswith(".py") or a.endswith(".ipynb")), None)
                if script:
                    entries.append(("ipython" if tool.startswith("ipython") else "python", script, n))
    return ShellScan(tuple(commands), tuple(entries), slurm)


def is_shell_file(name: str, head: bytes) -> bool:
    lower = name.lower()
    if lower.endswith((".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")):
        return True
    return head.startswith(b"#!") and any(s in head.split(b"\n", 1)[0] for s in (b"sh", b"bash"))
