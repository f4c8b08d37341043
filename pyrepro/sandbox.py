"""The sandbox every execution of foreign code goes through on the local backend.

Foreign code is a submission's scripts (the import check, the test and benchmark runs) and the
``setup.py`` of an sdist from the index (its build). Each runs under bubblewrap (``bwrap``,
Debian's package ``bubblewrap``) in fresh namespaces:

* the file system is an empty read-only root holding only what the run needs: the system's
  programs and libraries (``/usr`` and the links to it), a short list of ``/etc`` files
  (``ETC``: no ``/etc/shadow``), the interpreter the environment was made from, and the
  folders the caller names read-only (the environment, the staged source, the data) or
  writable (the run's own work and output folders); ``/tmp`` is private and empty, there is
  no home and no other environment, cache or checkout;
* no network (a private network namespace with only its own loopback) unless the caller asks
  for it: an sdist's isolated build fetches its build requirements from the index;
* its own process, IPC and UTS namespaces, no capabilities, killed with its parent.

The decision is made here and only here (``choose``). ``PYREPRO_SANDBOX=off`` (the commands'
``--no-sandbox``) runs without one, and the record says so; without it and without a working
``bwrap`` the run is refused with the install command (``SandboxUnavailable``). The Nix backend's
sandbox is Nix's own build sandbox (``checks.<name>-test``), not this module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyrepro import proc
from pyrepro.errors import MissingToolError

#: The environment variable that holds the decision: ``auto`` (default: bwrap, refuse without it)
#: or ``off`` (no sandbox; the ``--no-sandbox`` flag of the commands that run foreign code).
SETTING = "PYREPRO_SANDBOX"

#: Top-level system folders bound read-only (or re-created as the links they are: ``/bin ->
#: usr/bin`` on a merged-/usr system).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")

#: What of ``/etc`` a Python program needs: users and groups by name (no passwords, no shadow
#: file), name resolution, TLS roots, the time zone, the dynamic linker's cache, Debian's
#: alternatives (libblas.so.3 is a link through them), fonts (matplotlib).
ETC = ("passwd", "group", "hosts", "host.conf", "nsswitch.conf", "resolv.conf", "gai.conf", "ssl",
       "ca-certificates", "ca-certificates.conf", "localtime", "timezone", "ld.so.cache", "ld.so.conf",
       "ld.so.conf.d", "alternatives", "fonts", "mime.types", "protocols", "services", "os-release",
       "debian_version")

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: 'apt-get install bubblewrap'; Fedora: 'dnf install bubblewrap'), "
                "or run without a sandbox with --no-sandbox (PYREPRO_SANDBOX=off), which the record states")


class SandboxUnavailable(MissingToolError):
    """Foreign code would run, and there is no sandbox to run it in."""


@dataclass(frozen=True)
class Mounts:
    """What a sandboxed command sees besides the system: folders read-only and writable (each at
    its own path), device nodes (a GPU's), and whether it has the network."""

    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = ()
    network: bool = False

    def plus(self, *, read_only: Iterable[Path] = (), writable: Iterable[Path] = ()) -> Mounts:
        return Mounts(self.read_only + tuple(read_only), self.writable + tuple(writable), self.devices, self.network)


@dataclass(frozen=True)
class Sandbox:
    """The sandbox runs go through: ``kind`` is ``bwrap`` or ``none`` (``--no-sandbox``)."""

    kind: str
    program: str | None = None
    note: str = ""

    @property
    def active(self) -> bool:
        return self.kind != "none"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "active": self.active, "note": self.note}

    def wrap(self, argv: Sequence[str], mounts: Mounts, *, cwd: Path | None = None) -> list[str]:
        """``argv`` as it runs in this sandbox (unchanged without one)."""
        if not self.active:
            return [str(a) for a in argv]
        assert self.program is not None
        out = [self.program, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if mounts.network:
            out.append("--share-net")
        out += system_args()
        out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for d in mounts.devices:
            if os.path.exists(d):
                out += ["--dev-bind", str(d), str(d)]
        for p in _unique(mounts.read_only):
            if p.exists():
                out += ["--ro-bind", str(p), str(p)]
        for p in _unique(mounts.writable):
            p.mkdir(parents=True, exist_ok=True)
            out += ["--bind", str(p), str(p)]
        if cwd is not None:
            out += ["--chdir", str(cwd)]
        out += ["--remount-ro", "/", "--", *[str(a) for a in argv]]
        return out


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for p in paths:
        seen.setdefault(os.path.abspath(p), Path(os.path.abspath(p)))
    return list(seen.values())


def system_args() -> list[str]:
    """The system folders and ``/etc`` files, read-only; a top-level link re-created as a link."""
    out: list[str] = []
    for top in SYSTEM:
        if os.path.islink(top):
            out += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            out += ["--ro-bind", top, top]
    for name in ETC:
        p = os.path.join("/etc", name)
        if os.path.exists(p):
            out += ["--ro-bind", p, p]
    return out


def interpreter_paths(env_dir: Path) -> list[Path]:
    """The installation an environment's interpreter comes from (its standard library and
    libpython), found from the environment itself: ``pyvenv.cfg``'s ``home`` and the targets of
    the links in ``bin/`` and ``lib/`` (a virtualenv of Python 2 has links, no ``home``)."""
    found: list[Path] = []

    def add(p: Path) -> None:
        """``p``: a file in the installation's ``bin/`` or ``lib/``; its prefix is kept."""
        prefix = p.parent.parent if p.parent.name in ("bin", "lib", "lib64") else p.parent
        if prefix.is_dir() and not any(str(prefix) == s or str(prefix).startswith(s + "/") for s in SYSTEM):
            found.append(prefix)

    cfg = env_dir / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = (x.strip() for x in line.partition("="))
            if key == "home" and value:
                add(Path(value) / "python")
            elif key in ("base-executable", "executable") and value:
                add(Path(value))
    for folder in (env_dir / "bin", env_dir / "lib"):
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if p.is_symlink():
                try:
                    real = p.resolve()
                except OSError:
                    continue
                if not str(real).startswith(str(env_dir.resolve()) + os.sep):
                    add(real)
    orig = next(iter(sorted((env_dir / "lib").glob("python*/orig-prefix.txt"))), None)  # virtualenv < 20
    if orig is not None:
        found.append(Path(orig.read_text(encoding="utf-8").strip()))
    return _unique(p for p in found if p.is_dir())


_PROBED: dict[str, bool] = {}


def _works(program: str, runner: proc.Runner) -> bool:
    """Whether bwrap can make its namespaces here (a container may forbid them)."""
    if program not in _PROBED:
        try:
            done = runner([program, "--unshare-all", "--die-with-parent", *system_args(), "--proc", "/proc",
                           "--dev", "/dev", "--", "true"], check=False, timeout=60)
            _PROBED[program] = done.returncode == 0
        except Exception:  # any failure to start means no sandbox
            _PROBED[program] = False
    return _PROBED[program]


def choose(*, runner: proc.Runner = proc.run) -> Sandbox:
    """The sandbox of this process's runs (``SETTING``): bwrap when it works; ``none`` when
    switched off; ``SandboxUnavailable`` otherwise, with the install command."""
    setting = os.environ.get(SETTING, "auto").strip().lower() or "auto"
    if setting in ("off", "none", "0", "no", "false"):
        return Sandbox("none", note="NOT sandboxed: run with --no-sandbox (PYREPRO_SANDBOX=off); the code could "
                                    "read and write whatever this user can, and use the network")
    if setting not in ("auto", "bwrap", "on", "1", "yes", "true"):
        from pyrepro.errors import UsageError

        raise UsageError(f"{SETTING}={setting!r} is not a sandbox setting", hint=f"set {SETTING}=auto or off")
    program = shutil.which("bwrap")
    if program is None:
        raise SandboxUnavailable("foreign code (a submission's scripts, an sdist's build) runs only in a sandbox, "
                                 "and bubblewrap (bwrap) is not installed", hint=INSTALL_HINT)
    if not _works(program, runner):
        raise SandboxUnavailable("foreign code runs only in a sandbox, and bubblewrap cannot create its namespaces "
                                 "on this machine (user namespaces may be disabled, or a container forbids them)",
                                 hint="allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), "
                                      "or run with --no-sandbox (PYREPRO_SANDBOX=off), which the record states")
    return Sandbox("bwrap", program, note="bubblewrap: read-only system and environment, private /tmp, no home, "
                                          "writable only the run's own folders, network "
                                          "off unless stated, own process namespace, no capabilities")


def for_environment(env_dir: Path) -> Mounts:
    """What every run in an environment needs read-only: the environment and its interpreter."""
    return Mounts(read_only=(env_dir, *interpreter_paths(env_dir)))
