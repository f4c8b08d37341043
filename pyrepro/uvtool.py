"""uv, the second tool beside pdm: it installs locked wheels (``pyrepro.backends.local``) and, when
pdm's resolver runs out of time or reports a conflict no relaxation rule reads, it resolves the
same requirement set once more, for the same target (Python, linux x86_64, date bound), to guide
pdm (``pyrepro.lockplan``'s ``resolver-guided`` step).

uv never writes the lock: pdm still locks, with hashes, for every target, from requirements that
uv's versions pinned. uv's own resolution is an answer to "is there one at all, and which", read
from ``uv pip compile``'s output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from pyrepro.errors import ExternalToolError, MissingToolError
from pyrepro.interpreters import first_patch
from pyrepro.pdmrun import build_tool_overrides
from pyrepro.pinsearch import Answer
from pyrepro.proc import Runner
from pyrepro.relax import req_name

#: The platform uv resolves for: the lock's first target (pyrepro.pdmrun.PLATFORMS).
UV_PLATFORM = "x86_64-manylinux_2_28"
#: Seconds the guiding resolution may take (uv resolves in seconds what pdm backtracked on for minutes).
UV_RESOLVE_TIMEOUT = 180.0

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;#]+)")


def uv_executable() -> str | None:
    """The uv executable, or None: ``PYREPRO_UV`` names one; else the ``uv`` distribution installed
    beside pyrepro, else ``uv`` on PATH."""
    given = os.environ.get("PYREPRO_UV")
    if given:
        return given
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def uv_binary() -> str | None:
    """The uv executable that installs the wheels of a lock, or None (then pip does):
    ``PYREPRO_INSTALLER=pip`` chooses pip."""
    if os.environ.get("PYREPRO_INSTALLER", "").strip().lower() == "pip":
        return None
    return uv_executable()


def uv_cache(cache: Path) -> Path:
    """uv's cache under pyrepro's cache folder ``cache``: the installs' unpacked wheels and the
    guiding resolutions' metadata share it."""
    return cache / "uv"


@dataclass(frozen=True)
class Guide:
    """uv's answer for one requirement set: the version of every package of a resolution, or why
    there is none."""

    versions: tuple[tuple[str, str], ...]  # (canonical name, version), sorted
    error: str = ""  # uv's own words when it found no resolution or did not run

    @property
    def ok(self) -> bool:
        return bool(self.versions) and not self.error

    def version(self, name: str) -> str | None:
        from packaging.utils import canonicalize_name

        key = canonicalize_name(name)
        return next((v for n, v in self.versions if n == key), None)


def parse_compiled(text: str) -> tuple[tuple[str, str], ...]:
    """(canonical name, version) of every ``name==version`` line of ``uv pip compile`` output."""
    from packaging.utils import canonicalize_name

    out = {}
    for line in text.splitlines():
        m = _PIN.match(line.strip())
        if m:
            out[canonicalize_name(m.group(1))] = m.group(2)
    return tuple(sorted(out.items()))


_FAILED_BUILD = re.compile(r"Failed to build `([A-Za-z0-9][A-Za-z0-9._-]*)(?:==[^`]*)?`")
#: Requirements left out of uv's input, one per retry, when uv cannot build their sdist's metadata
#: (torch-scatter's setup.py imports torch, which its build requirements do not name).
UV_BUILD_RETRIES = 3


#: seconds a relaxed attempt's check by uv may take before pdm runs anyway
UV_PRECHECK_TIMEOUT = 60.0
#: requirement sets at least this large are checked by uv before pdm in the relaxation (pdm took
#: 30-90 s per attempt on a pip freeze of a hundred pins; a few pins lock in seconds anyway)
UV_PRECHECK_MIN = 10


def precheck(requirements: Sequence[str], python: str, bound: str | None, *, runner: Runner, cache: Path,
             uv: str | None = None, timeout: float = UV_PRECHECK_TIMEOUT, interpreter: str | None = None,
             package_bounds: Sequence[tuple[str, str]] = ()) -> str | None:
    """uv's explanation when it finds that ``requirements`` have no resolution for this target
    ("No solution found": a conflict, a release that does not exist), else None (resolved, uv
    missing, a build or network failure, a timeout: nothing is known, and pdm decides). pdm locks
    for more targets than uv resolves for, so what uv cannot resolve pdm cannot lock either, and
    uv says so in seconds where pdm's backtracking takes a minute (geoldm, corpus8 dev: six
    relaxation steps of a 94-line freeze took 45 s of pdm each)."""
    uv = uv or uv_executable()
    if uv is None:
        return None
    text, code, _out = _compile(uv, list(requirements), python, bound, runner=runner, cache=cache, timeout=timeout,
                                interpreter=interpreter, package_bounds=package_bounds)
    if code not in (0, -1) and no_solution(text):
        return "\n".join(ln for ln in text.splitlines() if ln.strip())
    return None


def guide(requirements: Sequence[str], python: str, bound: str | None, *, runner: Runner,
          cache: Path, uv: str | None = None, timeout: float = UV_RESOLVE_TIMEOUT,
          interpreter: str | None = None, package_bounds: Sequence[tuple[str, str]] = ()) -> Guide:
    """Resolve ``requirements`` with uv for CPython ``python`` on linux x86_64, with nothing
    uploaded on or after ``bound`` (pdm's ``--exclude-newer`` day: uv reads a bare date as the end
    of that day, so the bound is given as its first instant). A direct requirement whose sdist uv
    cannot build (for its metadata) is left out and the rest resolved again, so the guide pins the
    others (the left-out one stays as declared). Never raises for a failed resolution: the Guide
    says why."""
    from packaging.utils import canonicalize_name

    uv = uv or uv_executable()
    if uv is None:
        return Guide((), "uv is not installed (pip install uv, or set PYREPRO_UV)")
    reqs = list(requirements)
    for _ in range(UV_BUILD_RETRIES + 1):
        text, code, out = _compile(uv, reqs, python, bound, runner=runner, cache=cache, timeout=timeout,
                                   interpreter=interpreter, package_bounds=package_bounds)
        if code == 0:
            versions = parse_compiled(out)
            return Guide(versions) if versions else Guide((), "uv pip compile printed no resolution")
        m = _FAILED_BUILD.search(text)
        left = [r for r in reqs if m and req_name(r) == canonicalize_name(m.group(1))]
        if not left:
            break
        reqs = [r for r in reqs if r not in left]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return Guide((), "\n".join(lines[-8:]) or f"uv pip compile exited {code}")


def ask(requirements: Sequence[str], python: str, bound: str | None, *, runner: Runner, cache: Path,
        uv: str | None = None, timeout: float = UV_PRECHECK_TIMEOUT, interpreter: str | None = None,
        package_bounds: Sequence[tuple[str, str]] = (), fits: Callable[[str, str], bool] | None = None) -> Answer:
    """One query of the pin search's oracle (``pyrepro.pinsearch``): does ``requirements`` resolve for
    CPython ``python`` on linux x86_64 with nothing uploaded on or after ``bound``, and no
    pre-release unless a requirement names one (``--prerelease explicit``)? An answer is known when
    uv resolved (exit 0) or found that there is no resolution; a timeout, a failed sdist build or a
    missing uv is an unknown answer, with uv's words. ``fits(name, version)``: whether a release's
    Requires-Python admits the target; uv reads only its lower bound, so a release it took that does
    not fit is excluded and uv asked again, as ``lock_with_uv`` does (dataclasses 0.8, ``<3.7``, in a
    freeze resolved for 3.8: lm-bff-fewshot, corpus20 held, studied after its measurement)."""
    uv = uv or uv_executable()
    if uv is None:
        return Answer(False, "uv is not installed (pip install uv, or set PYREPRO_UV)", known=False)
    deadline = time.monotonic() + timeout
    excluded: list[str] = []
    for _ in range(UV_LOCK_RETRIES + 1):
        with tempfile.TemporaryDirectory(prefix="pyrepro-uv-ask-") as tmp:
            extra: tuple[str, ...] = ("--prerelease", "explicit")
            if excluded:
                (Path(tmp) / "constraints.txt").write_text("".join(f"{e}\n" for e in excluded), encoding="utf-8")
                extra += ("--constraint", str(Path(tmp) / "constraints.txt"))
            text, code, out = _compile(uv, list(requirements), python, bound, runner=runner, cache=cache,
                                       timeout=max(deadline - time.monotonic(), 1.0), extra=extra,
                                       interpreter=interpreter, package_bounds=package_bounds)
        if code != 0:
            # a release whose metadata cannot be built here is not the answer to "does a set
            # resolve": it is excluded and uv asked again, which takes another release of that
            # package or says that none holds (dill 0.3.1.1's setup.py, tapas, corpus21 dev: the
            # fully relaxed set was "unknown" and the lock stopped although it resolves)
            unbuilt = [f"{canonicalize_name(n)}!={v}" for n, v in _UNBUILT.findall(text)
                       if not _pinned_exactly(requirements, n, v)]
            if unbuilt and not set(unbuilt) <= set(excluded) and code != -1 and deadline - time.monotonic() > 5:
                excluded += [u for u in unbuilt if u not in excluded]
                continue
            words = "\n".join(ln for ln in text.splitlines() if ln.strip()) or f"uv pip compile exited {code}"
            if excluded:
                words += (f"\n(with {', '.join(excluded)} excluded: their Requires-Python rules out CPython {python}, "
                          "or their metadata could not be built)")
            return Answer(False, words, known=code != -1 and no_solution(text))
        versions = parse_compiled(out)
        if not versions:
            return Answer(False, "uv pip compile printed no resolution", known=False)
        unfit = [f"{n}!={v}" for n, v in versions if fits is not None and not fits(n, v)]
        if not unfit:
            return Answer(True, "", dict(versions))
        excluded += unfit
    return Answer(False, f"uv kept choosing releases whose Requires-Python excludes CPython {python}: "
                         f"{', '.join(excluded)}")


#: uv's words when the metadata of a release could not be built ("Failed to build `dill==0.3.1.1`")
_UNBUILT = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9][A-Za-z0-9._-]*)==([^`\s]+)`")


def _pinned_exactly(requirements: Sequence[str], name: str, version: str) -> bool:
    """Whether ``requirements`` ask for exactly that release (then excluding it cannot help)."""
    want = canonicalize_name(name)
    for r in requirements:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([^\s;,]+)\s*(?:;.*)?$", r)
        if m and canonicalize_name(m.group(1)) == want and m.group(2) == version:
            return True
    return False


#: uv's hint when an sdist's setup.py imports what its build requirements do not name
#: ("`academictorrents@1.11` depends on `six`, but doesn't declare it as a build dependency")
_UNDECLARED_BUILD_DEP = re.compile(r"`([A-Za-z0-9][A-Za-z0-9._-]*)@[^`]*` depends on `([A-Za-z0-9][A-Za-z0-9._-]*)`, "
                                   r"but doesn't declare it as a build dependency")
#: rounds of ``_compile`` that add such a build dependency and ask again
UV_BUILD_DEP_RETRIES = 3


def _compile(uv: str, reqs: Sequence[str], python: str, bound: str | None, *, runner: Runner, cache: Path,
             timeout: float, extra: Sequence[str] = (), interpreter: str | None = None,
             package_bounds: Sequence[tuple[str, str]] = ()) -> tuple[str, int, str]:
    """``uv pip compile``: (its error text, exit status, its output). ``interpreter``: the
    target's own CPython, which builds the metadata of sdists (else uv builds it with whatever
    Python it finds: absl-py 0.8.1's setup.py refuses CPython 3.11, "Python version 2.7 or 3.4+
    is required", and molecule-chef's 3.6 set got no answer). When the metadata build of an sdist
    the resolution reached fails because its setup.py imports a package its build requirements do
    not name, and uv's hint names both, uv is asked again with that package as an extra build
    dependency of that sdist (uv's ``extra-build-dependencies``; latent-diffusion, corpus18 dev:
    academictorrents 1.11's setup.py imports six, so uv could not answer and pdm's resolution of
    168 packages ran past the time allowed). Within ``timeout`` in all."""
    deadline = time.monotonic() + timeout
    added: dict[str, list[str]] = {}
    for _ in range(UV_BUILD_DEP_RETRIES + 1):
        text, code, out = _compile_once(uv, reqs, python, bound, runner=runner, cache=cache,
                                        timeout=max(deadline - time.monotonic(), 1.0), extra=extra,
                                        interpreter=interpreter, package_bounds=package_bounds, build_deps=added)
        if code in (0, -1):
            break
        found = [(pkg, dep) for pkg, dep in _UNDECLARED_BUILD_DEP.findall(text) if dep not in added.get(pkg, [])]
        if not found or deadline - time.monotonic() < 5:
            break
        for pkg, dep in found:
            added.setdefault(pkg, []).append(dep)
    return text, code, out


def _compile_once(uv: str, reqs: Sequence[str], python: str, bound: str | None, *, runner: Runner, cache: Path,
                  timeout: float, extra: Sequence[str] = (), interpreter: str | None = None,
                  package_bounds: Sequence[tuple[str, str]] = (),
                  build_deps: dict[str, list[str]] | None = None) -> tuple[str, int, str]:
    """One ``uv pip compile`` (see ``_compile``)."""
    with tempfile.TemporaryDirectory(prefix="pyrepro-uv-guide-") as tmp:
        req_in = Path(tmp) / "requirements.in"
        req_in.write_text("".join(f"{r}\n" for r in reqs), encoding="utf-8")
        # uv reads "3.6" as 3.6.0: the lock's own floor (pandas 1.0.0 needs >=3.6.1; retroxpert, corpus12)
        argv = [uv, "pip", "compile", str(req_in), "--python-version", first_patch(python),
                "--python-platform", UV_PLATFORM,
                "--no-annotate", "--no-header", "--quiet", "--no-config", *extra]
        if interpreter:
            argv += ["--python", interpreter]
        if build_deps:
            conf = Path(tmp) / "uv.toml"  # TOML strings are JSON strings: names and lists written as JSON
            conf.write_text("[extra-build-dependencies]\n" + "".join(
                f"{json.dumps(pkg)} = {json.dumps(deps)}\n" for pkg, deps in sorted(build_deps.items())),
                encoding="utf-8")
            argv += ["--config-file", str(conf)]
        if bound:
            argv += ["--exclude-newer", f"{bound}T00:00:00Z"]
            for name, day in (*build_tool_overrides(bound), *package_bounds):
                argv += ["--exclude-newer-package", f"{name}={day}T00:00:00Z"]
        index = os.environ.get("PIP_INDEX_URL") or os.environ.get("PDM_PYPI_URL")
        if index:
            argv += ["--index-url", index]
        env = {**os.environ, "UV_CACHE_DIR": str(cache), "UV_NO_PROGRESS": "1", "UV_PYTHON_DOWNLOADS": "never"}
        try:
            done = runner(argv, env=env, check=False, timeout=timeout)
        except (ExternalToolError, MissingToolError) as exc:  # a timeout or a missing binary: said why
            return f"uv pip compile did not finish: {exc}", -1, ""
    return (done.stderr or done.stdout or ""), done.returncode, done.stdout


_HASHED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def parse_hashed(text: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(canonical name, version, hashes) of ``uv pip compile --generate-hashes`` output, whose
    ``--hash=sha256:...`` lines follow each ``name==version \\`` line."""
    from packaging.utils import canonicalize_name

    out: list[tuple[str, str, tuple[str, ...]]] = []
    for line in text.splitlines():
        s = line.strip()
        m = _HASHED.match(s)
        if m:
            out.append((canonicalize_name(m.group(1)), m.group(2), ()))
        elif out and s.startswith("--hash="):
            name, version, hashes = out[-1]
            out[-1] = (name, version, (*hashes, s.removeprefix("--hash=").rstrip("\\ ").strip()))
    return out


#: Rounds of ``lock_with_uv`` that exclude releases whose Requires-Python rules the target out.
UV_LOCK_RETRIES = 4


def lock_with_uv(requirements: Sequence[str], python: str, bound: str | None, *, runner: Runner, cache: Path,
                 files_of: Callable[[str, str], list[tuple[str, str]]], content_hash: str, requires_python: str,
                 fits: Callable[[str, str], bool] | None = None,
                 timeout: float = UV_RESOLVE_TIMEOUT, why: str = "",
                 interpreter: str | None = None,
                 package_bounds: Sequence[tuple[str, str]] = ()) -> tuple[bool, str, str]:
    """A lock from uv's resolution of ``requirements`` for this target, for when pdm refuses the very
    set uv resolved (its lock is for a whole Python range and every marker, uv's for this target):
    ``uv pip compile --generate-hashes``, each package's files named from the index (``files_of``:
    (file name, "sha256:...") of a release), kept when uv gave their hash. (ok, uv's words or why
    not, the pdm.lock text). ``fits(name, version)``: whether that release's Requires-Python admits
    the target (uv reads only its lower bound). ``why``: why uv locks (the lock's header says it;
    default ``PDM_REFUSED``)."""
    uv = uv_executable()
    if uv is None:
        return False, "uv is not installed", ""
    # uv ignores the upper bounds of Requires-Python (dataclasses 0.8: >=3.6,<3.7 taken for 3.7,
    # molmap, corpus6); such a release is excluded and uv asked again (a few times at most)
    excluded: list[str] = []
    for _ in range(UV_LOCK_RETRIES + 1):
        with tempfile.TemporaryDirectory(prefix="pyrepro-uv-lock-") as tmp:
            extra: tuple[str, ...] = ("--generate-hashes",)
            if excluded:
                (Path(tmp) / "constraints.txt").write_text("".join(f"{e}\n" for e in excluded), encoding="utf-8")
                extra += ("--constraint", str(Path(tmp) / "constraints.txt"))
            text, code, out = _compile(uv, list(requirements), python, bound, runner=runner, cache=cache,
                                       timeout=timeout, extra=extra, interpreter=interpreter,
                                       package_bounds=package_bounds)
        if code != 0:
            # whole: uv's "No solution found" heads an explanation that may run long (scvi-tools's
            # filtered releases), and ``no_solution`` reads that head; the record trims it
            return False, "\n".join(ln for ln in text.splitlines() if ln.strip()) or f"uv exited {code}", ""
        unfit = [f"{n}!={v}" for n, v, _h in parse_hashed(out) if fits is not None and not fits(n, v)]
        if not unfit:
            break
        excluded += unfit
    else:
        return False, f"uv kept choosing releases whose Requires-Python excludes CPython {python}: {', '.join(excluded)}", ""
    packages = []
    for name, version, hashes in parse_hashed(out):
        files = [(f, h) for f, h in files_of(name, version) if h in hashes]
        if not files:
            return False, f"uv resolved {name} {version}, but the index lists no file of it with the hash uv gave", ""
        packages.append((name, version, files))
    if not packages:
        return False, "uv pip compile printed no resolution", ""
    from pyrepro.piplock import render_lock

    return True, "", render_lock(packages, content_hash, requires_python=requires_python, platform=UV_LOCK_PLATFORM,
                                 made_by=f"uv's resolution for CPython {python} ({why or PDM_REFUSED})")


#: why a lock is made from uv's resolution when no other reason is given
PDM_REFUSED = "pdm refused the same set"


def no_solution(text: str) -> bool:
    """Whether uv's words say the requirements have no resolution (a conflict, a release that does
    not exist), as opposed to uv not being able to answer (a build, a timeout, a missing file)."""
    return "No solution found" in text


#: The target of a lock made from uv's resolution (``UV_PLATFORM`` as pdm names platforms).
UV_LOCK_PLATFORM = "manylinux_2_28_x86_64"

__all__ = ["UV_LOCK_PLATFORM", "UV_PLATFORM", "Guide", "ask", "guide", "lock_with_uv", "parse_compiled", "parse_hashed",
           "uv_binary", "uv_cache", "uv_executable"]
