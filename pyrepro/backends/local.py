"""The local backend: the same pdm.lock and patched source as the Nix package, without Nix.

* Environment: ``<cache>/envs/<name>-<key>``, key = sha256(pdm.lock bytes, Python major.minor,
  platform). Built with the model's interpreter (``python -m venv``) and ``pip install
  --require-hashes --no-deps`` of exactly the locked files whose markers hold on the target.
* Source: ``<cache>/staged/<name>-<key>``, key = sha256(source tree id, patch hashes, runtime
  helper hashes). The pristine pinned folder with the series applied, read-only, next to a
  copy of ``pyrepro/runtime`` and any ``install = "tree"`` extra source.
* Launcher: ``<cache>/launchers/<name>-<env key>-<src key>`` runs the entry from a fresh
  writable work directory.

Both are built in a temporary folder and renamed into place (the rename is the commit), and
a finished folder holds ``.pyrepro-complete``: an interrupted build leaves nothing that looks
complete. A patch change restages only the source; nothing changed is a cache hit.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform as _platform
import re
import shutil
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from pyrepro import lock, patches, proc, sandbox, sources, uvtool, verify
from pyrepro.backends import BuiltModel
from pyrepro.errors import (
    BuildError,
    InputError,
    IntegrityError,
    NotFoundError,
    PyreproError,
    SdistBuildError,
    SourceUnavailableError,
)
from pyrepro.interpreters import find_python, first_patch, version_key
from pyrepro.paths import Paths
from pyrepro.proc import Runner
from pyrepro.uvtool import uv_binary
from pyrepro.progress import NULL_PROGRESS, Progress, output_detail, release_of
from pyrepro.registry import ModelSpec

BACKEND_VERSION = "1"
COMPLETE = ".pyrepro-complete"
RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"


def host_platform() -> str:
    return f"{_platform.system().lower()}-{_platform.machine()}"


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------ requirements from a lock

@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    hashes: tuple[str, ...]
    sdist_only: bool = False  # no wheel in the lock: built here, after the wheels (see build_env)


def locked_packages(lock_path: Path, python: str, platform: str) -> list[Locked]:
    """The packages of ``pdm.lock`` that install on CPython ``python`` on ``platform``."""
    from packaging.markers import InvalidMarker, Marker

    from pyrepro.markers import target_environment

    try:
        data = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise NotFoundError(f"no lock for this model: {lock_path}", hint="run 'pyrepro lock NAME' first") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=lock_path) from exc
    env = target_environment(python, platform, first_patch(python))
    out = []
    fileless: list[tuple[str, str]] = []
    from pyrepro.index import wheel_fits

    # the machine whose wheels a Linux CPython 3 target installs; "" (not checked) for another target
    machine = next((m for m in ("x86_64", "aarch64") if "linux" in platform and platform.endswith(m)), "") \
        if python.startswith("3.") else ""
    for i, pkg in enumerate(data.get("package", [])):
        marker = pkg.get("marker")
        if marker:
            try:
                if not Marker(marker).evaluate({**env, "extra": ""}):
                    continue
            except InvalidMarker as exc:
                raise InputError(f"invalid marker {marker!r}: {exc}", path=lock_path, key=f"package[{i}].marker") from exc
        if not pkg.get("files"):
            # pdm locked a release that has no file for this target (rdkit 2026.9.1 for CPython 3.8:
            # no cp38 wheel, no sdist, and no Requires-Python that said so): nothing installs, as
            # when an sdist does not build, so the same repair moves it (pyrepro.repair)
            fileless.append((str(pkg.get("name", "")), str(pkg.get("version", ""))))
            continue
        hashes = tuple(f["hash"] for f in pkg.get("files", []) if "hash" in f)
        if not hashes:
            raise InputError(f"package {pkg.get('name')} has no file hashes", path=lock_path,
                             key=f"package[{i}].files", hint="relock with 'pyrepro lock NAME'")
        names = [str(f.get("file", "")) for f in pkg.get("files", [])]
        # an sdist whose wheels are all for other Pythons is built here like a sdist-only release
        # (netCDF4 1.6.2 for 3.6: wheels from cp37; galaxy-zoo-bcnn, corpus13 dev). In the wheel group
        # pip built it anyway, and its failure was no sdist failure, so no repair moved it.
        fitting = any(n.endswith(".whl") and (not machine or wheel_fits(n, python, machine)) for n in names)
        sdist_only = bool(names) and not fitting
        if machine and names and all(n.endswith(".whl") for n in names) and not fitting:
            # wheels for other Pythons only (tensorflow-io-gcs-filesystem 0.35.0 locked for 3.8, whose
            # wheels start at cp39, and no Requires-Python said so: keras-ngf, corpus11 dev): pip finds
            # nothing to install, so it is repaired like a release with no file at all
            fileless.append((str(pkg.get("name", "")), str(pkg.get("version", ""))))
            continue
        out.append(Locked(pkg["name"], pkg["version"], hashes, sdist_only))
    if fileless:
        said = ", ".join(f"{n} {v}" for n, v in fileless)
        raise SdistBuildError(f"{lock_path}: the lock has no file of {said} for CPython {python} on {platform} "
                              "(the release has neither a wheel for it nor an sdist)", packages=tuple(fileless),
                              hint="relock with a release that has a wheel for this Python (pyrepro reproduce does)")
    return out


def requirements_text(pkgs: list[Locked]) -> str:
    lines = []
    for p in sorted(pkgs, key=lambda p: p.name):
        hashes = " ".join(f"--hash={h}" for h in p.hashes)
        lines.append(f"{p.name}=={p.version} {hashes}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the pip that installs the lock

# The pip that installs a lock must run on the target Python and read the tags of the locked wheels.
# A venv brings the pip its Python bundled, which for these is too old or depends on the patch
# release: 3.6.15's pip 18.1 reads no manylinux2014 or manylinux_2_x tag (orjson 3.6.1's cp36
# wheels: "No matching distribution"), 3.7.0's is pip 10. Such a venv first gets the last pip
# released for its Python, from PyPI, hash-checked; every other Python keeps its venv's pip.
BOOTSTRAP_PIP: dict[str, tuple[str, str]] = {
    "3.6": ("21.3.1", "sha256:deaf32dcd9ab821e359cd8330786bcd077604b5c5730c0b096eda46f95c24a2d"),
    "3.7": ("24.0", "sha256:ba0d021a166865d2265246961bec0152ff124de910c5cc39f1156ce3fa7c69dc"),
}


def make_venv(python: Path, version: str, dest: Path, paths: Paths, *, runner: Runner = proc.run) -> None:
    """An environment of interpreter ``python`` (CPython ``version``) at ``dest``: ``python -m
    venv``, or for Python 2 virtualenv (``piplock.python2_env``)."""
    if version.startswith("2."):
        from pyrepro.piplock import python2_env

        python2_env(python, dest, paths.cache, runner=runner)
    else:
        runner([str(python), "-m", "venv", str(dest)], check=True, timeout=600)
    link_libpython(python, version, dest)


def link_libpython(python: Path, version: str, dest: Path) -> list[Path]:
    """Links in ``dest/lib`` to the interpreter's shared libpython (``libpython2.7.so``), when its
    installation has one: code that compiles and links against Python at run time looks for it
    under ``sys.prefix``, which in an environment is the environment (Theano's C modules link with
    ``-lpython2.7`` and stopped on "cannot find -lpython2.7": skip-thoughts, corpus14 held).
    Returns the links made."""
    try:
        base = Path(python).resolve().parent.parent / "lib"
        found = sorted(base.glob(f"libpython{version}*.so*"))
    except OSError:
        return []
    made = []
    for lib in found:
        link = dest / "lib" / lib.name
        if link.exists() or link.is_symlink():
            continue
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(lib)
            made.append(link)
        except OSError:
            continue
    return made


def bootstrap_pip(python: str) -> tuple[str, str] | None:
    """``(version, hash)`` of the pip a ``python`` (``"3.6"``) venv is given before the lock is
    installed, or None (its venv's own pip)."""
    return BOOTSTRAP_PIP.get(python)


# ------------------------------------------------------------------ keys

def env_key(spec: ModelSpec, platform: str | None = None) -> str:
    lock = spec.dir / "pdm.lock"
    try:
        data = lock.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"no lock for {spec.name}: {lock}", hint=f"run 'pyrepro lock {spec.name}' first") from exc
    pip = bootstrap_pip(spec.python)  # part of the key where it applies (other keys stay as they were)
    return _sha("env", BACKEND_VERSION, data, spec.python, platform or host_platform(), *(pip or ()))[:20]


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def src_key(spec: ModelSpec, series: tuple[patches.Patch, ...]) -> str:
    extras = [f"{e.name}:{e.commit}:{e.install}" for e in spec.extra_sources]
    return _sha("src", BACKEND_VERSION, spec.source.tree, patches.series_digest(series),
                _tree_digest(RUNTIME_DIR), *extras)[:20]


# ------------------------------------------------------------------ building

def _complete(path: Path) -> dict[str, object] | None:
    marker = path / COMPLETE
    if marker.is_file():
        try:
            info = json.loads(marker.read_text())
        except ValueError:
            return None
        return info if isinstance(info, dict) else None
    return None


def _commit_dir(tmp: Path, final: Path) -> None:
    try:
        os.rename(tmp, final)
    except OSError:
        if _complete(final) is None:
            raise


def _extra_source_dir(name: str, commit: str, paths: Paths, repository: str = "") -> Path:
    """Where an extra (git) source is found: ``$PYREPRO_EXTRA_SOURCES/<name>-<commit>`` or the cache."""
    candidates = []
    env = os.environ.get("PYREPRO_EXTRA_SOURCES")
    if env:
        candidates.append(Path(env) / f"{name}-{commit}")
        candidates.append(Path(env) / name)
    candidates.append(paths.cache / "extra-sources" / f"{name}-{commit}")
    for c in candidates:
        if c.is_dir():
            return c
    raise SourceUnavailableError(
        f"extra source {name}@{commit[:12]} is not available offline (looked in {', '.join(map(str, candidates))})",
        source=(name, repository, commit),
        hint=f"put a checkout of that commit at {candidates[-1]} (e.g. 'git clone ... && git checkout {commit}'), "
             "or set PYREPRO_EXTRA_SOURCES to a folder holding <name>-<commit>/")


# pip's lines that say where an install is: which package it fetches, builds or installs.
_PIP_FETCH = re.compile(r"^\s*(Collecting|Processing|Downloading|Using cached)\s+(\S+)(.*)$")
_PIP_SIZE = re.compile(r"\(([\d.]+ [kMG]?B)\)")
_PIP_BUILD = re.compile(r"^\s*(Building wheel for \S+|Running setup\.py install for \S+|Installing build dependencies"
                        r"|Preparing metadata)")
_PIP_INSTALL = re.compile(r"^\s*(Installing collected packages:|Successfully installed)\s+(.*)$")


def pip_detail(line: str) -> str | None:
    """A progress detail from one line of ``pip install`` output ("Collecting torch==2.0.0",
    "Building wheel for x", "Installing 12 collected packages"); ``None`` for the rest."""
    m = _PIP_FETCH.match(line)
    if m:
        what = release_of(m.group(2).rstrip("/").rsplit("/", 1)[-1])  # a URL or a path: its file's release
        size = _PIP_SIZE.search(m.group(3))
        return f"{m.group(1)} {what}" + (f" ({size.group(1)})" if size else "")
    m = _PIP_BUILD.match(line)
    if m:
        return m.group(1)
    m = _PIP_INSTALL.match(line)
    if m:
        n = len(m.group(2).replace(",", " ").split())
        return f"Installing {n} collected packages" if m.group(1).startswith("Installing") else \
            f"Successfully installed {n} packages"
    if line.startswith("ERROR:"):
        return line
    return None


def build_bound(spec: ModelSpec, sdists: list[Locked] | None = None, index: Any = None) -> dt.date | None:
    """The date sdists' build requirements are bounded by: the lock's own date bound when it has
    one (``exclude_newer`` in lock.toml); else the later of the day after the submission and the
    day after the newest upload among the locked ``sdists`` (asked of ``index``): a sdist was made
    for the build tools of its own day (torch-scatter 2.1.1's setup.py imports pkg_resources, which
    setuptools no longer ships), never older ones; and never before the model's Python had been out
    ``PYTHON_SETTLED``. None when unknown."""
    bound = _build_bound(spec, sdists, index)
    # never before the Python itself was out for a while: a build tool older than its interpreter
    # may not run there (the setuptools of 2018 on CPython 3.11: ramanspy-figs, corpus9 dev, whose
    # notebooks state 3.11 and whose pysptools sdist is of 2018)
    from pyrepro.interpreters import RELEASES

    out = dict(RELEASES).get(spec.python)
    floor = out + PYTHON_SETTLED if out is not None else None
    if bound is not None and floor is not None and bound < floor:
        return floor
    return bound


PYTHON_SETTLED = dt.timedelta(days=90)  # build tools of the first months of a Python know it


def _build_bound(spec: ModelSpec, sdists: list[Locked] | None, index: Any) -> dt.date | None:
    try:
        rec = lock.read_record(spec.dir) or {}
    except PyreproError:
        rec = {}
    try:
        if rec.get("exclude_newer"):
            return dt.date.fromisoformat(str(rec["exclude_newer"])[:10])
    except ValueError:
        pass
    submitted = spec.submitted + dt.timedelta(days=1) if spec.submitted else None
    days = []
    for p in (sdists or []) if index is not None else []:
        try:
            day = index.uploaded(p.name, p.version)
            if day:
                days.append(dt.date.fromisoformat(str(day)[:10]) + dt.timedelta(days=1))
        except (ValueError, PyreproError):
            continue
    # a lock with no date bound may hold sdists newer than the submission (an as-declared lock
    # takes the newest releases): a 2024 sdist is not built with the setuptools of 2021
    # (useful-rdkit-utils, corpus5 dev)
    return max([d for d in (submitted, *days) if d is not None], default=None)


def boxed_builds(runner: Runner, box: sandbox.Sandbox, env_dir: Path, paths: Paths) -> Runner:
    """``runner`` for the commands that build foreign code into ``env_dir`` (an sdist's
    ``setup.py``, a source folder's build): each in ``box`` with the network (an isolated build
    fetches its build requirements from the index) and, writable, only the environment being
    built, the folders its command names under the system's temporary folder (the wheels it
    writes) and a private work folder (home, ``TMPDIR`` and pip's cache); read-only the
    interpreter, the download store and pyrepro's build tools. Nothing else of the machine: no
    home, no checkout, no other environment."""
    if not box.active:
        return runner

    def run(cmd: Sequence[str], **kw: Any) -> Any:
        work = Path(tempfile.mkdtemp(prefix="pyrepro-build-"))
        try:
            (work / "home").mkdir()
            env = {**(kw.pop("env", None) or os.environ), "HOME": str(work / "home"), "TMPDIR": str(work),
                   "PIP_CACHE_DIR": str(work / "pip-cache"), "PYTHONNOUSERSITE": "1"}
            tmp_root = os.path.realpath(tempfile.gettempdir())
            named = [Path(a) if os.path.isdir(a) else Path(a).parent for a in map(str, cmd)
                     if os.path.isabs(a) and os.path.realpath(a).startswith(tmp_root + os.sep) and os.path.exists(a)]
            mounts = sandbox.Mounts(read_only=(*sandbox.interpreter_paths(env_dir), download_store(paths),
                                               paths.cache / "tools"),
                                    writable=(env_dir, work, *named), network=True)
            return runner(box.wrap(cmd, mounts, cwd=kw.pop("cwd", None) or work), env=env, **kw)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


def build_env(spec: ModelSpec, paths: Paths, *, runner: Runner = proc.run, progress: Progress = NULL_PROGRESS,
              platform: str | None = None, index: Any = None,
              sdist_seconds: float | None = None) -> tuple[Path, str, str, bool]:
    """The model's environment: (dir, key, full python version, cache hit). ``index``: the package
    index asked for the sdists' build requirements (default: PyPI through ``pyrepro.index``).
    ``sdist_seconds``: how long one sdist's build may run (default ``sdist_cap()``); a build
    that runs longer is killed and that sdist reported as not built (``SdistBuildError``), with no
    second attempt without isolation, so a repair can move it (``pyrepro.repair``)."""
    cap = sdist_seconds or sdist_cap()
    key = env_key(spec, platform)
    final = paths.cache / "envs" / f"{spec.name}-{key}"
    info = _complete(final)
    if info is not None and verify.has_manifest(final):
        return final, key, str(info.get("python", spec.python)), True
    python = find_python(spec.python, runner=runner)
    pkgs = locked_packages(spec.dir / "pdm.lock", spec.python, platform or host_platform())
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # an incomplete leftover of an interrupted build
        shutil.rmtree(final, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.name}-{key}.", dir=final.parent))
    label = f"build {spec.name} env"
    progress.start(label, total=len(pkgs) + 2)
    try:
        # Console scripts in a venv carry its path in their shebang; they are rewritten to the
        # final path just before the rename. pyrepro itself only calls 'bin/python -m ...'.
        make_venv(python, spec.python, tmp, paths, runner=runner)
        progress.advance(label, 1, "venv")
        extra_pkgs = [_extra_source_dir(e.name, e.commit, paths, e.repository) for e in spec.extra_sources
                      if e.install == "package"]
        # The lock decides every version: a host-wide pip constraint (a machine capping torch in
        # /etc/xdg/pip) must not make a hash-checked install of the lock impossible.
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_CONSTRAINT": os.devnull}
        pip = bootstrap_pip(spec.python)
        if pip is not None:
            (tmp / "bootstrap-pip.txt").write_text(f"pip=={pip[0]} --hash={pip[1]}\n", encoding="utf-8")
            runner([str(tmp / "bin" / "python"), "-m", "pip", "install", "--require-hashes", "--no-deps",
                    "--progress-bar=off", "-r", str(tmp / "bootstrap-pip.txt")], env=env, check=True, timeout=600,
                   on_line=output_detail(progress, label, pip_detail))
            progress.advance(label, 0, f"pip {pip[0]} (the last for Python {spec.python})")
        # Two phases: every package with a wheel, then the sdist-only ones. A sdist is built as its
        # authors would (PEP 517 build isolation: its declared build requirements in a fresh build
        # environment); when that fails, again without isolation, so a setup.py that imports an
        # installed package it never declared (torch-scatter imports torch) still builds.
        wheels = [p for p in pkgs if not p.sdist_only]
        sdists = [p for p in pkgs if p.sdist_only]
        # what builds foreign code (sdists, source folders) runs in the sandbox; without one it is
        # refused here, unless switched off (--no-sandbox), before anything is installed
        builder = boxed_builds(runner, sandbox.choose(), tmp, paths) if sdists or extra_pkgs else runner
        # the wheels: uv where it can (several times faster: parallel, unpacked once per machine),
        # pip where it cannot (Pythons before UV_OLDEST) or when uv fails
        uv = uv_binary() if version_key(spec.python) >= version_key(UV_OLDEST) else None
        installer, uv_failed = "pip", ""
        no_isolation: dict[str, Any] | None = None
        if sdists and index is None:  # the sdists' build requirements (and, undated, their upload days)
            from pyrepro.index import Index

            index = Index(paths.cache)
        bound = build_bound(spec, sdists, index)
        bounded = _bounded_build_requirements(spec, sdists, paths, index, bound)
        iso_env = env
        if bounded is not None and bounded.constraints:
            (tmp / "build-constraints.txt").write_text("\n".join(bounded.constraints) + "\n", encoding="utf-8")
            # PIP_CONSTRAINT reaches the isolated build environment's pip (pip < 25.3); newer pip
            # reads PIP_BUILD_CONSTRAINT for the same
            iso_env = {**env, "PIP_CONSTRAINT": str(tmp / "build-constraints.txt"),
                       "PIP_BUILD_CONSTRAINT": str(tmp / "build-constraints.txt")}
            progress.advance(label, 0, f"build requirements bounded by {bound}: "
                             + ", ".join(bounded.constraints))
        for phase, group, tries in (("requirements.txt", wheels, ([],)),
                                    ("requirements-sdist.txt", sdists, ([], ["--no-build-isolation"]))):
            if not group:
                continue
            req = tmp / phase
            req.write_text(requirements_text(group), encoding="utf-8")
            failures = []
            outputs = []  # each attempt's whole output: which sdist failed is read from it, not the tail
            timed_out: list[Locked] = []  # sdists whose build ran past ``cap`` and was killed
            for flags in tries:
                if flags:  # without isolation the venv builds: give it the build tools of the era first
                    tools = no_isolation_tools(bounded, pkgs, spec, paths, index, bound)
                    done = builder([str(tmp / "bin" / "python"), "-m", "pip", "install", "--progress-bar=off",
                                   *tools], env=env, check=False, timeout=1800,
                                  on_line=output_detail(progress, label, pip_detail))
                    progress.advance(label, 0, "build tools for the build without isolation: " + " ".join(tools))
                    no_isolation = {"tools": tools, "ok": done.returncode == 0}
                    commands = build_tools_named(*outputs)
                    first = [str(tmp / "bin")]
                    if commands:  # a command the failed build ran (swig): its binary wheel, on PATH
                        tools_bin, ok = build_tools_bin(commands, paths, env, runner, index=index, bound=bound,
                                                        python=spec.python)
                        progress.advance(label, 0, "command-line tools the build ran: " + " ".join(commands))
                        no_isolation["commands"] = list(commands)
                        no_isolation["commands_ok"] = ok
                        first.insert(0, str(tools_bin))
                    env = {**env, "PATH": os.pathsep.join([*first, env.get("PATH", "")])}
                def install(*extra: str, flags: list[str] = flags, req: Path = req, group: list[Locked] = group) -> Any:
                    run_env = iso_env if group is sdists and not flags else env
                    if group is sdists and len(group) > 1 and build_jobs() > 1:
                        return build_sdists_in_parallel(tmp / "bin" / "python", group, flags, run_env, builder,
                                                        progress, label, cap=cap, timed_out=timed_out,
                                                        store=paths.cache / "built-wheels")
                    argv = [str(tmp / "bin" / "python"), "-m", "pip", "install", "--require-hashes",
                            "--no-deps", "--progress-bar=off", *flags, *extra, "-r", str(req)]
                    if group is not sdists:
                        # the lock names a wheel for each of these: never a fallback to its sdist (a
                        # wheel's hash edited in pdm.lock would make pip build the sdist instead)
                        argv[argv.index("-r"):argv.index("-r")] = ["--only-binary", ":all:"]
                        return runner(argv, env=run_env, check=False, timeout=7200,
                                      on_line=output_detail(progress, label, pip_detail))
                    return _capped(builder, argv, run_env, cap, group, timed_out, progress, label)

                res = None
                if group is wheels and uv is not None:
                    res = _uv_install(uv, tmp, req, paths, env, runner, progress, label)
                    if res.returncode == 0:
                        installer = "uv"
                        break
                    progress.advance(label, 0, "uv could not install the wheels; pip installs them")
                    uv_failed = "\n".join((res.stderr or res.stdout or "").strip().splitlines()[-5:])
                    res = None
                if group is wheels and _in_store(group, download_store(paths)):
                    # every locked package has a wheel in the store: install from it without asking
                    # the index; a wheel for another Python or platform there sends it to the download
                    res = install("--no-index", "--find-links", str(download_store(paths)))
                    if res.returncode != 0:
                        progress.advance(label, 0, "the download store lacks a file for this target; downloading")
                        res = None
                if res is None:
                    res = install(*(_fetch_to_store(runner, tmp, req, paths, env, progress, label)
                                    if group is wheels else ()))
                if res.returncode == 0:
                    break
                outputs.append(f"{res.stdout or ''}\n{res.stderr or ''}")
                if timed_out:  # built again without isolation it would run as long: the repair's turn
                    slow = ", ".join(f"{p.name} {p.version}" for p in timed_out)
                    named = tuple(dict.fromkeys([(p.name, p.version) for p in timed_out]
                                                + [hit for out in outputs for hit in _named_failures(group, out)]))
                    raise SdistBuildError(
                        f"the build of the sdist{'s' if len(timed_out) > 1 else ''} {slow} of {spec.name} did not "
                        f"end within {cap:.0f} s, the time the sdists' builds may take here, and was stopped",
                        packages=named, slow=True, hint="a release with a wheel for this Python, or another Python, avoids "
                        "the build; or allow more time with PYREPRO_SDIST_SECONDS")
                mode = "without build isolation" if flags else ("with build isolation" if len(tries) > 1 else "")
                failures.append(f"pip exit {res.returncode}{' ' + mode if mode else ''}:\n"
                                + "\n".join((res.stderr or res.stdout).strip().splitlines()[-25:]))
            else:
                what = "the locked packages" if len(tries) == 1 else "the sdist-only locked packages (" + \
                    ", ".join(p.name for p in group) + ")"
                hint = ("see the pip output above; a sdist that needs a compiler or a package "
                        "without a wheel for this Python are the usual causes")
                if group is sdists:
                    needs = system_needs(*outputs)
                    if needs:
                        hint = (f"the build needs {', '.join(needs)} from the system (development files of a "
                                "system library, or a tool pip cannot install): install it with the system's "
                                "package manager, or pin a release that has a wheel for this Python")
                    raise SdistBuildError(f"installing {what} of {spec.name} failed"
                                          + (f" (needs from the system: {', '.join(needs)})" if needs else "")
                                          + ": " + "; then ".join(failures),
                                          packages=failed_sdists(group, *outputs), hint=hint, needs=needs)
                raise BuildError(f"installing {what} of {spec.name} failed: " + "; then ".join(failures), hint=hint)
        progress.advance(label, len(pkgs), "installed")
        for src in extra_pkgs:
            # built from a copy (pip builds in the tree, writing build/ and *.egg-info there): the
            # cached checkout stays as fetched, and the sandboxed build sees only the copy
            with tempfile.TemporaryDirectory(prefix="pyrepro-extra-src-") as copy_dir:
                copy = Path(copy_dir) / src.name
                shutil.copytree(src, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
                builder([str(tmp / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                         str(copy)], env=env, check=True, timeout=3600, on_line=output_detail(progress, label, pip_detail))
        version = runner([str(tmp / "bin" / "python"), "-c",
                          "import platform; print(platform.python_version())"], check=True).stdout.strip()
        _fix_shebangs(tmp, final)
        info: dict[str, Any] = {"name": spec.name, "key": key, "python": version, "packages": len(pkgs),
                                "built_at": time.time(), "installer": installer,
                                **({"uv_failed": uv_failed} if uv_failed else {}),
                                **({"pip": pip[0]} if pip is not None else {})}
        if no_isolation is not None:
            info["no_isolation_build_tools"] = no_isolation
        if bounded is not None:
            info["build_requirements"] = {"bound": str(bound), "constraints": list(bounded.constraints),
                                          "notes": list(bounded.notes)}
        (tmp / COMPLETE).write_text(json.dumps(info) + "\n")
        # every file as installed, kept outside the environment: checked before every run
        verify.write_manifest(tmp, at=verify.manifest_path(final))
        _commit_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress.finish(label, f"{len(pkgs)} packages")
    return final, key, version, False


# ------------------------------------------------------------------ the installer of the wheels

#: The oldest Python uv installs into (``uv pip install --python``); older ones (2.7) use pip.
#: uv 0.13 installs hash-checked wheels into CPython 3.6 and 3.7 venvs too (checked 2026-12-06
#: with pyenv's 3.6.15 and 3.7.16); before, 3.6/3.7 environments went to pip and a torch
#: environment on 3.7 (3dinfomax, corpus5) ran out of its 10 minutes in pip's unpacking.
UV_OLDEST = "3.6"


def build_jobs() -> int:
    """How many sdists are built at once: ``PYREPRO_BUILD_JOBS``, else the machine's cores (at most 4).
    A torch extension's setup.py compiles its files one after another (torch-scatter turns ninja
    off), so two sdists built side by side can take about the time of the longer one."""
    given = os.environ.get("PYREPRO_BUILD_JOBS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    return max(1, min(4, os.cpu_count() or 1))


def sdist_cap(default: float = 7200) -> float:
    """How long one sdist's build may run before it is stopped and reported as not built:
    ``PYREPRO_SDIST_SECONDS``, else ``default`` (``pyrepro reproduce`` gives less than ``build``:
    a torch extension such as torch-scatter takes longer than its budget to compile on 2 cores)."""
    given = os.environ.get("PYREPRO_SDIST_SECONDS", "").strip()
    try:
        return float(given) if given and float(given) > 0 else default
    except ValueError:
        return default


def _capped(runner: Runner, argv: list[str], env: dict[str, str], cap: float, group: list[Locked],
            timed_out: list[Locked], progress: Progress, label: str) -> Any:
    """``runner(argv)`` for a build of the sdists of ``group`` with at most ``cap`` seconds: on that
    timeout, the sdists whose build pip had started and not finished go to ``timed_out`` (all of
    the group when its output does not say) and a failed result is returned."""
    from pyrepro.errors import ExternalToolError
    from pyrepro.proc import Completed

    try:
        return runner(argv, env=env, check=False, timeout=cap, on_line=output_detail(progress, label, pip_detail))
    except ExternalToolError as exc:
        if exc.timeout is None:
            raise
        out = f"{exc.stdout or ''}\n{exc.stderr or ''}"
        started = {canonicalize_name(m) for m in re.findall(r"Building wheel for (\S+)", out)}
        done = {canonicalize_name(m) for m in re.findall(r"Created wheel for (\S+?):", out)}
        slow = [p for p in group if canonicalize_name(p.name) in started - done] or list(group)
        timed_out.extend(p for p in slow if p not in timed_out)
        return Completed(tuple(argv), -1, exc.stdout or "", exc.stderr or "")


def build_sdists_in_parallel(python: Path, group: list[Locked], flags: list[str], env: dict[str, str],
                             runner: Runner, progress: Progress, label: str, *, cap: float = 7200,
                             timed_out: list[Locked] | None = None, store: Path | None = None) -> Any:
    """Build each sdist of ``group`` into a wheel (``pip wheel``, hash-checked, ``flags`` as the
    install would use), ``build_jobs()`` at a time, then install the wheels (built here from the
    checked sdists) without asking the index. One result, as one pip install's: the return code is
    nonzero when any build or the install failed, and the output holds every build's (pip's "Failed
    to build NAME" lines name the sdists that failed).

    ``cap`` bounds the builds together, as it bounds one ``pip install`` of the group when they are
    built one after another: a build is given what is left of it, and one not started by then is
    counted as timed out (kaggle-diabetic-retinopathy, corpus19 dev: eleven 2015 sdists for
    CPython 2.7, numpy, scipy and matplotlib among them, each under the cap, ran the reproduction's
    whole budget out in pip before any repair could move one to a release with a wheel).

    ``store``: wheels built here before, by the hash-checked sdist, the interpreter and the flags
    (``built_wheel_dir``): an sdist built once is not built again, when a repair relocks and the
    next environment holds it too, or when a reproduction is rerun."""
    import concurrent.futures

    from pyrepro.proc import Completed

    deadline = time.monotonic() + cap
    late = timed_out if timed_out is not None else []
    with tempfile.TemporaryDirectory(prefix="pyrepro-sdist-wheels-") as tmpdir:
        work = Path(tmpdir)
        out_dir = work / "wheels"
        out_dir.mkdir()

        def build(p: Locked) -> Any:
            req = work / f"{p.name}.txt"
            req.write_text(requirements_text([p]), encoding="utf-8")
            argv = [str(python), "-m", "pip", "wheel", "--require-hashes", "--no-deps", "--progress-bar=off", *flags,
                    "-w", str(out_dir), "-r", str(req)]
            kept = built_wheel_dir(store, p, python, flags) if store is not None else None
            if kept is not None and (found := sorted(kept.glob("*.whl"))):
                for w in found:
                    shutil.copy2(w, out_dir / w.name)
                progress.advance(label, 0, f"{p.name} {p.version}: the wheel built from its sdist before")
                return Completed(tuple(argv), 0, f"{p.name} {p.version}: built before ({found[0].name})\n", "")
            left = deadline - time.monotonic()
            if left < 1:
                late.append(p)
                return Completed(tuple(argv), -1, "", f"{p.name} {p.version}: not built, the {cap:.0f} s the sdists' "
                                 "builds may take had run out")
            progress.advance(label, 0, f"building {p.name} {p.version} from its sdist")
            own = work / "own" / p.name  # this sdist's wheel alone, to keep
            own.mkdir(parents=True)
            argv[argv.index("-w") + 1] = str(own)
            res = _capped(runner, argv, env, min(cap, left), [p], late, progress, label)
            wheels = sorted(own.glob("*.whl"))
            for w in wheels:
                shutil.copy2(w, out_dir / w.name)
            if res.returncode == 0 and wheels and kept is not None:
                tmp_keep = kept.with_name(kept.name + f".{os.getpid()}.tmp")
                shutil.rmtree(tmp_keep, ignore_errors=True)
                tmp_keep.mkdir(parents=True)
                for w in wheels:
                    shutil.copy2(w, tmp_keep / w.name)
                try:
                    tmp_keep.rename(kept)
                except OSError:  # another build kept it first
                    shutil.rmtree(tmp_keep, ignore_errors=True)
            return res

        with concurrent.futures.ThreadPoolExecutor(min(build_jobs(), len(group))) as pool:
            results = list(pool.map(build, sorted(group, key=lambda p: p.name)))
        stdout = "\n".join(r.stdout or "" for r in results)
        stderr = "\n".join(r.stderr or "" for r in results)
        failed = [r for r in results if r.returncode != 0]
        argv = (str(python), "-m", "pip", "wheel", *(p.name for p in group))
        if failed:
            return Completed(argv, failed[0].returncode, stdout, stderr)
        wheels = sorted(str(w) for w in out_dir.glob("*.whl"))
        done = runner([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--progress-bar=off", *wheels],
                      env=env, check=False, timeout=1800, on_line=output_detail(progress, label, pip_detail))
        return Completed(argv, done.returncode, f"{stdout}\n{done.stdout or ''}", f"{stderr}\n{done.stderr or ''}")


def built_wheel_dir(store: Path, p: Locked, python: Path, flags: Sequence[str]) -> Path:
    """Where the wheel built from ``p``'s hash-checked sdist by the interpreter behind ``python``
    (a venv's, resolved to the one it was made from) with ``flags`` is kept."""
    key = hashlib.sha256("\0".join([canonicalize_name(p.name), p.version, *sorted(p.hashes),
                                     str(Path(python).resolve()), *flags]).encode()).hexdigest()[:32]
    return store / f"{canonicalize_name(p.name)}-{p.version}-{key}"


def uv_cache(paths: Paths) -> Path:
    """uv's cache: wheels unpacked once and hard-linked into every environment that locks them
    (a torch environment's GBs are written once per machine, not once per environment)."""
    return uvtool.uv_cache(paths.cache)


#: uv's cache holds wheels unpacked (a torch set is 6 GB): past this size (MB, from
#: PYREPRO_UV_CACHE_MB) it is emptied before the next install. Environments built from it keep
#: their hard-linked files; the next install fetches again. The held run of corpus4 filled the
#: disk with 16 GB of it after 11 submissions.
UV_CACHE_MB = 8192


def bound_uv_cache(paths: Paths, limit_mb: float | None = None) -> int:
    """Empty uv's cache when it is larger than ``limit_mb``; the bytes freed (0 within bounds)."""
    if limit_mb is None:
        try:
            limit_mb = float(os.environ.get("PYREPRO_UV_CACHE_MB", UV_CACHE_MB))
        except ValueError:
            limit_mb = UV_CACHE_MB
    root = uv_cache(paths)
    if not root.is_dir():
        return 0
    size, seen = 0, set()
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                size += st.st_size
    if size <= limit_mb * 1024 * 1024:
        return 0
    sources.make_writable(root)
    shutil.rmtree(root, ignore_errors=True)
    return size


def _uv_install(uv: str, venv: Path, req: Path, paths: Paths, env: dict[str, str], runner: Runner,
                progress: Progress, label: str) -> Any:
    """Install the hash-pinned wheels of ``req`` into ``venv`` with uv (no sdist is built: those are
    pip's phase). The result; a failure leaves the venv to pip, which installs over it."""
    # copied, never hard-linked from uv's cache: an environment shares no file (inode) with the
    # cache or another environment, so a write into one cannot change the others; compiled to
    # bytecode here, as runs do not write any (PYTHONDONTWRITEBYTECODE) into a verified tree
    argv = [uv, "pip", "install", "--python", str(venv / "bin" / "python"), "--require-hashes", "--no-deps",
            "--no-build", "--no-config", "--link-mode", "copy", "--compile-bytecode", "-r", str(req)]
    index = env.get("PIP_INDEX_URL")
    if index:
        argv[3:3] = ["--index-url", index]
    freed = bound_uv_cache(paths)
    if freed:
        progress.advance(label, 0, f"uv's cache was over its bound: emptied ({freed / 1e9:.1f} GB)")
    uv_env = {**env, "UV_CACHE_DIR": str(uv_cache(paths)), "UV_NO_PROGRESS": "1", "UV_PYTHON_DOWNLOADS": "never"}
    return runner(argv, env=uv_env, check=False, timeout=7200, on_line=output_detail(progress, label, pip_detail))


def download_store(paths: Paths) -> Path:
    """The files pip downloaded for any lock, kept across environments. pip on a machine may keep
    no HTTP cache, and a torch environment is several GB of wheels: each file is fetched once
    and checked against the lock's sha256 every time it is used (pip re-downloads a file whose
    hash does not match)."""
    return paths.cache / "downloads"


def _in_store(group: list[Locked], store: Path) -> bool:
    """Whether the download store holds a wheel named for every locked package of ``group`` (by
    name and version only: which of them fits the target, pip decides)."""
    if not store.is_dir():
        return False
    from packaging.utils import canonicalize_name

    names = {f.name.lower() for f in store.iterdir() if f.name.endswith(".whl")}
    return all(any(n.startswith(f"{canonicalize_name(p.name).replace('-', '_')}-{p.version}-".lower()) for n in names)
               for p in group)


def _fetch_to_store(runner: Runner, venv: Path, req: Path, paths: Paths, env: dict[str, str],
                    progress: Progress, label: str) -> list[str]:
    """Download the locked files of ``req`` into the download store with the venv's own pip (the
    target Python's tags choose the file, as the install would) and return the flags that make
    the install read only the store; [] when the download fails (the install then goes to the
    index itself and reports what is wrong)."""
    store = download_store(paths)
    store.mkdir(parents=True, exist_ok=True)
    res = runner([str(venv / "bin" / "python"), "-m", "pip", "download", "--require-hashes", "--no-deps",
                  "--progress-bar=off", "-d", str(store), "-r", str(req)], env=env, check=False, timeout=7200,
                 on_line=output_detail(progress, label, pip_detail))
    if res.returncode != 0:
        progress.advance(label, 0, "download into the store failed; installing from the index")
        return []
    return ["--no-index", "--find-links", str(store)]


def _fix_shebangs(env_dir: Path, new: Path) -> None:
    """Point the venv's scripts (pip, ipython, ...) and activate files at ``new``."""
    old_b, new_b = str(env_dir).encode(), str(new).encode()
    for p in (env_dir / "bin").iterdir():
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            if old_b in data:
                p.write_bytes(data.replace(old_b, new_b))
    cfg = env_dir / "pyvenv.cfg"
    if cfg.is_file():
        cfg.write_bytes(cfg.read_bytes().replace(old_b, new_b))


def stage_source(spec: ModelSpec, paths: Paths, *, mirror: Path | None = None,
                 runner: Runner = proc.run) -> tuple[Path, Path, str, bool]:
    """The staged source: (contribution dir, runtime dir, key, cache hit). Symbolic links that lead
    out of the source (or loop) are not staged: each is a warning, and the completion marker names
    them (``links_out``)."""
    import logging

    from pyrepro import fsutil

    series = patches.load_series(paths.patch_dir(spec.name))
    patches.check_reviewed(paths.patch_dir(spec.name), series)  # only reviewed patches are ever applied
    key = src_key(spec, series)
    final = paths.cache / "staged" / f"{spec.name}-{key}"
    done = _complete(final)
    # a tree staged before links out were dropped (no "links_out" in its marker) is staged again
    if done is not None and "links_out" in done and verify.has_manifest(final):
        return final / "src", final / "runtime", key, True
    pristine = sources.obtain_source(spec.source, mirror=paths.mirror(mirror), cache=paths.cache).path
    # the staged tree holds no link that leads out of it: apply_series leaves out the pristine
    # source's, and the extra trees' are removed below; each is named (never followed)
    links_out = fsutil.outward_links(pristine)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        sources.make_writable(final)
        shutil.rmtree(final, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.name}-{key}.", dir=final.parent))
    try:
        patches.apply_series(series, pristine, tmp / "src", runner=runner)
        for e in spec.extra_sources:
            if e.install == "tree":
                shutil.copytree(_extra_source_dir(e.name, e.commit, paths, e.repository), tmp / "src" / e.name,
                                symlinks=True, ignore=shutil.ignore_patterns(".git"))
        links_out += fsutil.contained_links(tmp / "src")
        shutil.copytree(RUNTIME_DIR, tmp / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
        for rel, said in links_out:
            logging.getLogger(__name__).warning("%s: %s is a link out of the source (to %r); not staged",
                                                spec.name, rel, said[:80])
        (tmp / COMPLETE).write_text(json.dumps({"name": spec.name, "key": key,
                                                "patches": [p.path.name for p in series],
                                                "links_out": [rel for rel, _said in links_out]}) + "\n")
        verify.write_manifest(tmp, at=verify.manifest_path(final))  # checked before every run (pyrepro.verify)
        sources.make_read_only(tmp)
        _commit_dir(tmp, final)
    except BaseException:
        sources.make_writable(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final / "src", final / "runtime", key, False


def write_launcher(spec: ModelSpec, paths: Paths, env_dir: Path, src: Path, runtime: Path,
                   ekey: str, skey: str) -> Path:
    path = paths.cache / "launchers" / f"{spec.name}-{ekey[:10]}-{skey[:10]}"
    script = patches.entry_script(spec.entry)
    prog = spec.entry[0]
    text = f"""#!/bin/sh
# pyrepro launcher for {spec.name} (local backend). Runs the patched entry from a fresh work dir.
set -eu
work="$(mktemp -d "${{TMPDIR:-/tmp}}/pyrepro-{spec.name}.XXXXXX")"
cd "$work"
export HOME="${{PYREPRO_HOME:-$work/home}}" XDG_CACHE_HOME="$work/home/.cache" MPLCONFIGDIR="$work/home/.mpl"
mkdir -p "$HOME" "$XDG_CACHE_HOME" "$MPLCONFIGDIR"
export PYTHONPATH="{runtime}${{PYTHONPATH:+:$PYTHONPATH}}"
export PATH="{env_dir}/bin:$PATH"
exec "{env_dir}/bin/{prog}" "{src}/{script}"{"".join(" " + json.dumps(a) for a in spec.entry[spec.entry.index(script) + 1:])} "$@"
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path


def check_lock_matches(spec: ModelSpec) -> None:
    """Refuse a lock whose content hash disagrees with the model's pyproject.toml (edited without
    relocking): the environment would not be what the pyproject says."""
    from pyrepro import lock as lock_mod

    if not (spec.dir / "pyproject.toml").is_file() or not (spec.dir / "pdm.lock").is_file():
        return
    for problem in lock_mod.check_lock_dir(spec.dir):
        if problem.key == "metadata.content_hash" or "not valid TOML" in problem.message:
            raise IntegrityError(f"{problem.path}: {problem.message}",
                                 hint=f"relock with: pyrepro lock {spec.name} (or restore the pyproject.toml)")


def _discard(path: Path) -> None:
    sources.make_writable(path)
    shutil.rmtree(path, ignore_errors=True)


def failed_sdists(group: list[Locked], *pip_outputs: str) -> tuple[tuple[str, str], ...]:
    """Which of the sdists pip tried to build failed: the ones pip names ("Failed to build x y",
    "Building wheel for x ... error", "Getting requirements to build wheel ... for x"), else all.
    Several outputs are the attempts in order (isolated build first): the first that names any
    decides, since a retry without isolation also fails for sdists that built fine in isolation
    (no Cython or wheel in a bare environment) and must not make them look broken."""
    for out in pip_outputs:
        hit = _named_failures(group, out)
        if hit:
            return hit
    return tuple((p.name, p.version) for p in group)


# What a failed sdist build says it lacks from the system: a header, a library's config tool, a
# pkg-config module, a compiler. pip cannot install these; the user's system package manager can.
_SYSTEM_NEEDS = (
    re.compile(r"fatal error: ([\w./+-]+\.h(?:pp)?): No such file or directory"),
    re.compile(r"\b([\w.-]+_config|[\w.-]+-config): (?:command )?not found"),
    re.compile(r"OSError: ([\w.-]+_config|[\w.-]+-config) not found"),
    re.compile(r"Package '?([\w.+-]+)'? was not found in the pkg-config search path"),
    # a compiler that is not there; "failed with exit status 1" is one that ran and stopped on the
    # code (regex 2022.1.18's Python 3 C code on Python 2: crowdflower-relevance, corpus14 dev)
    re.compile(r"error: command '([\w.+/-]*(?:gcc|g\+\+|cc|gfortran|clang))' failed: No such file or directory"),
    re.compile(r"unable to execute '([\w.+/-]*(?:gcc|g\+\+|cc|gfortran|clang))': No such file or directory"),
    re.compile(r"Can not find Rust compiler|(cargo|rustc) (?:is )?not found"),
    # rpy2's build asks ``R RHOME`` and stops on "Unable to determine R home: [Errno 2] No such file
    # or directory: 'R'" (spykesml-encoding, corpus18 dev): the R language itself is the need
    re.compile(r"Unable to determine (R) home"),
)


# a build that ran a command it could not run, or that failed at once for want of it
_TOOL_FAILED = re.compile(r"error: command '([\w.+/-]+)' failed|unable to execute '([\w.+/-]+)'|"
                          r"\b([\w.+-]+): (?:command )?not found|No such file or directory: '([\w.+/-]+)'")


def build_tools_named(*pip_outputs: str) -> tuple[str, ...]:
    """Distributions of the build tools (the name table's ``[build_tools]``: swig, cmake) that the
    failed builds ran or looked for, in order of first mention; () when none."""
    from pyrepro.resolve import build_tool

    out: dict[str, None] = {}
    for text in pip_outputs:
        for m in _TOOL_FAILED.finditer(text):
            got = build_tool(next(g for g in m.groups() if g))
            if got is not None:
                out[got[0]] = None
    return tuple(out)


def build_tools_bin(dists: Sequence[str], paths: Paths, env: dict[str, str], runner: Runner, *,
                    index: Any = None, bound: dt.date | None = None, python: str = "") -> tuple[Path, bool]:
    """The ``bin/`` of a Python 3 environment of pyrepro's own interpreter in
    ``<cache>/tools/build-tools/<bound>`` (made once per bound) holding the binary wheels of ``dists``
    (swig, cmake): the tools run whatever Python the model has (the swig wheel's launcher is Python 3
    code, which a Python 2 environment cannot run: ebo, corpus9 dev), each the newest release before
    the build's date ``bound`` when one is known, else the oldest after it (swig 4 writes code for
    Python 3 only; box2d for Python 2 needs the swig of its day, and PyPI's swig wheels start in
    2020 with 3.0.x). (bin folder, whether pip installed them)."""
    import sys

    wanted = []
    for d in dists:
        version = None
        if bound is not None and index is not None:
            from pyrepro import buildreqs

            version = buildreqs.newest_before(index, d, "", bound) or buildreqs.oldest_after(index, d, "", bound)
        wanted.append(f"{d}=={version}" if version else d)
    venv = paths.cache / "tools" / "build-tools" / (bound.isoformat() if bound else "newest")
    if not (venv / "bin" / "python").exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        runner([sys.executable, "-m", "venv", str(venv)], env=env, check=False, timeout=600)
    done = runner([str(venv / "bin" / "python"), "-m", "pip", "install", "--progress-bar=off", "--only-binary",
                   ":all:", *wanted], env=env, check=False, timeout=1800)
    return venv / "bin", done.returncode == 0


def system_needs(*pip_outputs: str) -> tuple[str, ...]:
    """What the failed builds say they need from the system (``mysql_config``, ``mysql.h``,
    ``cairo`` (pkg-config), ``gcc``), in order of first mention; () when nothing is named."""
    out: dict[str, None] = {}
    for text in pip_outputs:
        for line in text.splitlines():
            for rx in _SYSTEM_NEEDS:
                m = rx.search(line)
                if m:
                    out[next((g for g in m.groups() if g), None) or "a Rust compiler"] = None
    return tuple(out)


def _named_failures(group: list[Locked], pip_output: str) -> tuple[tuple[str, str], ...]:
    from packaging.utils import canonicalize_name

    named: set[str] = set()
    for m in re.finditer(r"Failed to build (?:installable wheels for some pyproject\.toml based projects )?"
                         r"\(?([A-Za-z0-9._, -]+?)\)?\s*$", pip_output, re.M):
        named |= {canonicalize_name(x) for x in re.split(r"[,\s]+", m.group(1)) if x}
    for m in re.finditer(r"(?:Building wheel|Preparing metadata|Getting requirements to build wheel)"
                         r"[^\n]*? for ([A-Za-z0-9._-]+)[^\n]*(?:error|did not run successfully)", pip_output):
        named.add(canonicalize_name(m.group(1)))
    # pip's closing lines on stderr, all that is left when the build's own output is longer than
    # the kept tail: "ERROR: Failed building wheel for x", "Could not build wheels for x, y, which
    # are required ..." (snap_mlearn: only these named mpi4py, and the retry's output blamed the rest)
    for m in re.finditer(r"Failed building wheel for ([A-Za-z0-9._-]+)", pip_output):
        named.add(canonicalize_name(m.group(1)))
    for m in re.finditer(r"Could not build wheels for ([A-Za-z0-9._, -]+?),? which (?:is|are) required", pip_output):
        named |= {canonicalize_name(x) for x in re.split(r"[,\s]+", m.group(1)) if x and x != "and"}
    # "Collecting x==1.0" ... "Preparing metadata (pyproject.toml): finished with status 'error'":
    # pip names the package only on the Collecting line before the failed step
    # (a failed "Building wheel for x" names x itself, and comes after every Collecting line)
    current = ""
    for line in pip_output.splitlines():
        cm = re.match(r"\s*Collecting ([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if cm:
            current = canonicalize_name(cm.group(1))
        elif line.startswith("Building wheels for collected packages"):
            current = ""
        elif current and "finished with status 'error'" in line and not re.search(r" for [A-Za-z0-9]", line):
            named.add(current)
    return tuple((p.name, p.version) for p in group if canonicalize_name(p.name) in named)


# What a build without isolation needs in the venv itself: a venv of 3.12 or newer has no
# setuptools, and none has wheel ("invalid command 'bdist_wheel'" from a 2021 setup.py).
NO_ISOLATION_BASE = ("setuptools", "wheel")


def no_isolation_tools(bounded: Any, pkgs: list[Locked], spec: ModelSpec, paths: Paths, index: Any,
                       bound: dt.date | None) -> list[str]:
    """What is pip-installed into the venv before the sdists are built without isolation: the
    sdists' declared build requirements pinned to their era (``bounded``: Cython, numpy, ...),
    plus setuptools and wheel, each the newest release before the date bound; never a package the
    lock has (the locked numpy stays). Unbounded names where no date or no release is known."""
    from packaging.utils import canonicalize_name

    locked = {canonicalize_name(p.name) for p in pkgs}
    out: dict[str, str] = {}
    for line in (bounded.constraints if bounded is not None else ()):
        name = canonicalize_name(line.split("==", 1)[0])
        if name not in locked:
            out[name] = line
    for name in NO_ISOLATION_BASE:
        if name in out or name in locked:
            continue
        version = None
        if bound is not None:
            from pyrepro import buildreqs
            from pyrepro.index import Index

            version = buildreqs.newest_before(index or Index(paths.cache), name, "", bound, spec.python)
        out[name] = f"{name}=={version}" if version else name
    return [out[k] for k in sorted(out)]


def _bounded_build_requirements(spec: ModelSpec, sdists: list[Locked], paths: Paths, index: Any,
                                bound: dt.date | None) -> Any:
    """``buildreqs.constraints`` for the sdists of this build bounded by ``bound`` (``build_bound``),
    or None (no sdists, no date)."""
    if not sdists or bound is None:
        return None
    from pyrepro import buildreqs
    from pyrepro.index import Index

    return buildreqs.constraints(index or Index(paths.cache), [(p.name, p.version) for p in sdists], bound,
                                 spec.python, exclude=[p.name for p in sdists])


_MACHINE_TROUBLE = re.compile(r"No space left on device|Disk quota exceeded|MemoryError|Killed|"
                              r"Temporary failure in name resolution|Connection (?:reset|refused)|Read timed out")


def lock_at_fault(exc: BaseException) -> bool:
    """Whether a failed build says the lock does not install (a package that does not build or
    install), as opposed to trouble of the machine (a full disk, the network) that says nothing
    about the lock."""
    return isinstance(exc, BuildError) and not _MACHINE_TROUBLE.search(str(exc))


def build(spec: ModelSpec, paths: Paths, *, mirror: Path | None = None, runner: Runner = proc.run,
          progress: Progress = NULL_PROGRESS, repair: bool = False, sdist_seconds: float | None = None) -> BuiltModel:
    """The model's staged source and environment, from the cache when there. ``repair`` (what
    ``pyrepro build`` does): a cached tree that fails content verification (pyrepro.verify) is
    discarded and built again; without it (``run``), the run's own verification refuses it.
    ``sdist_seconds``: how long one sdist's build may run (``build_env``).

    Two builds of one model and lock at once (two reproductions, a batch's workers on one cache)
    take turns: the second waits for the first's lock (``pyrepro.cachelock``), then reuses its
    environment, staged source and launcher instead of building them a second time beside it."""
    from pyrepro import cachelock

    check_lock_matches(spec)
    try:
        turn = f"build-{spec.name}-{env_key(spec)}"
    except NotFoundError:  # no lock yet: build_env says so, after the source, as before
        turn = f"build-{spec.name}"
    with cachelock.held(paths.cache, turn, progress=progress, label=f"build {spec.name}"):
        t0 = time.monotonic()
        src, runtime, skey, src_hit = stage_source(spec, paths, mirror=mirror, runner=runner)
        if repair and src_hit:
            try:
                verify.verify_tree(src.parent, rebuild_hint="")
            except IntegrityError as exc:
                progress.advance(f"build {spec.name}", 0, f"restaging: {exc}")
                _discard(src.parent)
                src, runtime, skey, src_hit = stage_source(spec, paths, mirror=mirror, runner=runner)
        try:
            env_dir, ekey, version, env_hit = build_env(spec, paths, runner=runner, progress=progress,
                                                        sdist_seconds=sdist_seconds)
        except BuildError as exc:  # SdistBuildError too: the lock does not install here
            if lock_at_fault(exc):
                lock.record_build(spec.dir, env_key=env_key(spec), python=spec.python, error=str(exc))
            raise
        if repair and env_hit:
            try:
                verify.verify_env(env_dir, rebuild_hint="")
            except IntegrityError as exc:
                progress.advance(f"build {spec.name}", 0, f"rebuilding the environment: {exc}")
                _discard(env_dir)
                env_dir, ekey, version, env_hit = build_env(spec, paths, runner=runner, progress=progress)
        launcher = write_launcher(spec, paths, env_dir, src, runtime, ekey, skey) if not (env_hit and src_hit) \
            else paths.cache / "launchers" / f"{spec.name}-{ekey[:10]}-{skey[:10]}"
        if not launcher.exists():
            launcher = write_launcher(spec, paths, env_dir, src, runtime, ekey, skey)
        lock.record_build(spec.dir, env_key=ekey, python=version)
        return BuiltModel(spec.name, "local", env_dir, ekey, src, runtime, skey, launcher, version, env_hit, src_hit,
                          time.monotonic() - t0)


STALE_TMP_SECONDS = 24 * 3600


def _sweep(paths: Paths, doomed: Any, dry_run: bool) -> list[Path]:
    """Remove (or list, ``dry_run``) the cached environments, staged sources and launchers for
    which ``doomed(sub, path)`` holds."""
    removed = []
    for sub in ("envs", "staged", "launchers", "downloads", "uv"):
        d = paths.cache / sub
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if not doomed(sub, p):
                continue
            removed.append(p)
            if not dry_run:
                if p.is_dir():
                    sources.make_writable(p)
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
                if sub in ("envs", "staged"):  # its manifest and stat index go with it
                    m = verify.manifest_path(p)
                    for f in (m, m.with_name(m.stem + ".stat.json")):
                        f.unlink(missing_ok=True)
    return removed


def gc(paths: Paths, specs: list[ModelSpec], *, dry_run: bool = False, remove: tuple[str, ...] = (),
       everything: bool = False) -> list[Path]:
    """Remove environments, staged sources and launchers that no registry entry references, and
    download-store files that no registry lock names (a day old at least); or, on request, only the
    entries of the models named in ``remove`` (or every entry and the whole store: ``everything``),
    referenced or not (the next build makes them again).

    Hidden entries are temporary build folders (``.<name>-<key>.XXXX``) and helper homes: they are
    left alone unless they are temporary folders older than a day (an interrupted build). A model
    whose keys cannot be computed (e.g. a patch series that does not parse) keeps all its entries.
    """
    if remove:
        known = {s.name for s in specs} | {p.name.rsplit("-", 1)[0] for sub in ("envs", "staged")
                                           if (paths.cache / sub).is_dir() for p in (paths.cache / sub).iterdir()}
        unknown = [n for n in remove if n not in known]
        if unknown:
            raise NotFoundError(f"no model and no cached environment named {', '.join(unknown)}",
                                hint="name a model of the registry (pyrepro report lists them)")
    if remove or everything:  # on request: the named models' entries (every entry with --all), nothing else
        def doomed(sub: str, p: Path) -> bool:
            if sub in ("uv", "downloads"):  # shared by every lock: emptied by --all only
                return everything and (sub == "uv" or not p.name.startswith("."))
            return not p.name.startswith(".") and (everything or any(p.name.startswith(f"{n}-") for n in remove))

        return _sweep(paths, doomed, dry_run)
    keep: set[str] = set()
    keep_prefix: set[str] = set()
    launchers: set[str] = set()
    for s in specs:
        try:
            ek = env_key(s)
        except NotFoundError:  # not locked yet: no environment to keep
            ek = None
        try:
            sk = src_key(s, patches.load_series(paths.patch_dir(s.name)))
        except PyreproError:
            keep_prefix.add(f"{s.name}-")
            continue
        keep.add(f"{s.name}-{sk}")
        if ek is not None:
            keep.add(f"{s.name}-{ek}")
            launchers.add(f"{s.name}-{ek[:10]}-{sk[:10]}")
    now = time.time()

    files: set[str] = set()  # the download store keeps the files some model's lock names
    for s in specs:
        try:
            lock_data = tomllib.loads((s.dir / "pdm.lock").read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        files |= {str(f.get("file", "")) for pkg in lock_data.get("package", []) for f in pkg.get("files", [])}

    def unreferenced(sub: str, p: Path) -> bool:
        if sub == "uv":  # uv's own cache: emptied by gc --all only (its entries are shared by every lock)
            return False
        if sub == "downloads":
            return p.is_file() and p.name not in files and now - p.stat().st_mtime > STALE_TMP_SECONDS
        if p.name.startswith("."):  # a temporary build folder, only when an interrupted build left it a day ago
            return p.name.count(".") >= 2 and p.is_dir() and now - p.stat().st_mtime > STALE_TMP_SECONDS
        return not (p.name in (launchers if sub == "launchers" else keep)
                    or any(p.name.startswith(k) for k in keep_prefix))

    return _sweep(paths, unreferenced, dry_run)
