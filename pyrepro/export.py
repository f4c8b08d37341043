"""``pyrepro export NAME``: a model's validated environment as an OCI image archive.

The image holds everything a run needs and nothing of the machine it was made on: the
environment the local backend built from ``pdm.lock`` and verified against its manifest, the
CPython installation that environment was made from, every shared library the interpreter,
the environment's compiled modules and the model's run-time tools need (the dynamic loader and
the C library included, found with ``ldd``), a POSIX shell, the patched source with pyrepro's
runtime helpers, and the reproduction record. Layout inside the image (``docs/export.md``):

=======================  ==============================================================
``/opt/python``          the interpreter's installation (its own tests and site-packages left out)
``/opt/venv``            the environment, relocated: ``pyvenv.cfg``'s home, the ``bin/`` scripts'
                         shebangs and the ``python`` link point into the image
``/opt/model/src``       the patched source (the staged tree, read-only modes kept)
``/opt/model/runtime``   pyrepro's runtime helpers (``PYTHONPATH``)
``/usr/lib/...``         the shared libraries, at the paths the build machine has them
``/pyrepro/record.json`` the record: source pin, lock sha256, environment key, patches, pyrepro
``/data/benchmarks``     (empty) where the benchmark files are mounted
``/data/datasets``       (empty) where the datasets are mounted
``/out``                 where the predictions are written
=======================  ==============================================================

The entry point is the model's uniform CLI with the run flags pointing at those folders;
arguments given to the container (``--test``) follow them, and a flag given again wins.

The environment's and the source's bytes are the verified ones: each file is hashed as it is
written into its layer and compared with the manifest written when the tree was made. Files
whose contents are changed on the way (relocation, the time stamp of compiled bytecode) are
compared before they are changed. Layers are deterministic (``pyrepro.oci``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import struct
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyrepro import oci, patches, proc, sandbox, verify
from pyrepro.backends import BuiltModel
from pyrepro.errors import BuildError, PyreproError
from pyrepro.paths import Paths
from pyrepro.proc import Runner
from pyrepro.progress import NULL_PROGRESS, Progress
from pyrepro.registry import ModelSpec

PYTHON = "/opt/python"
ENV = "/opt/venv"
MODEL = "/opt/model"
RECORD = "/pyrepro/record.json"
BENCHMARKS = "/data/benchmarks"
DATASETS = "/data/datasets"
OUTPUT = "/out"
WORK = "/work"

#: Writable folders every runtime expects (sticky, like /tmp) and mount points the image offers.
FOLDERS = {"tmp": 0o1777, WORK[1:]: 0o1777, OUTPUT[1:]: 0o777, "data": 0o755, BENCHMARKS[1:]: 0o755,
           DATASETS[1:]: 0o755, "proc": 0o555, "dev": 0o755, "sys": 0o555, "etc": 0o755}
PASSWD = b"root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
GROUP = b"root:x:0:\nnogroup:x:65534:\n"

#: Parts of the interpreter's installation no run of an environment uses: the standard
#: library's own test suite (a third of its size) and the base installation's site-packages
#: (an environment made without ``--system-site-packages`` never sees it).
LEFT_OUT = {"test": "the standard library's own test suite",
            "site-packages": "the base installation's site-packages (the environment has its own)",
            "static": "the static library, for building programs that embed Python"}
#: non-ELF files up to this size are relocated (read whole); larger ones are copied as they are
TEXT_LIMIT = 16 << 20
LDD_BATCH = 200


class ExportError(BuildError):
    """The environment cannot be made into an image (exit 11, as a build that fails)."""


# ------------------------------------------------------------------ relocation

@dataclass(frozen=True)
class Relocation:
    """Host folders and where they are in the image; ``text`` rewrites file contents, ``link``
    a link's target. A folder is replaced only as a whole path component (``/a/b`` is not
    replaced inside ``/a/bc``)."""

    pairs: tuple[tuple[str, str], ...]
    changed: list[str] = field(default_factory=list, compare=False)

    @classmethod
    def of(cls, mapping: dict[Path, str]) -> Relocation:
        pairs: dict[str, str] = {}
        for host, image in mapping.items():
            for variant in {os.path.abspath(host), os.path.realpath(host)}:
                pairs[variant] = image
        return cls(tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0]))))

    def _pattern(self) -> re.Pattern[bytes]:
        alts = b"|".join(re.escape(h.encode()) for h, _ in self.pairs)
        return re.compile(b"(" + alts + rb")(?![A-Za-z0-9_.+-])")

    def text(self, data: bytes, where: str = "") -> bytes:
        """``data`` with the host folders replaced, when it is text (no NUL byte: in a binary
        file a path of another length would move every byte after it)."""
        if b"\0" in data:
            return data
        table = {h.encode(): i.encode() for h, i in self.pairs}
        out = self._pattern().sub(lambda m: table[m.group(1)], data)
        if out != data and where:
            self.changed.append(where)
        return out

    def mentions(self, data: bytes) -> bool:
        return self._pattern().search(data) is not None

    def link(self, target: str) -> str:
        if not target.startswith("/"):
            return target
        for host, image in self.pairs:
            if target == host or target.startswith(host + "/"):
                return image + target[len(host):]
        return target


def pyc_layout(python: str) -> tuple[int, bool]:
    """(header size, has flags) of the bytecode files of CPython ``python`` ("3.10.13"):
    16 with flags from 3.7 (PEP 552), 12 for 3.3 to 3.6, 8 for 2.7."""
    major, minor = (int(x) for x in python.split(".")[:2])
    if (major, minor) >= (3, 7):
        return 16, True
    return (12, False) if major == 3 else (8, False)


def clamp_pyc(data: bytes, source_mtime: int, source_size: int, *, python: str, epoch: int = oci.EPOCH) -> bytes:
    """The bytecode file ``data`` made valid for its source at time ``epoch`` (every file's time
    in the image): when its header records the source's present time and size (the check the
    interpreter makes), the time is set to ``epoch``; otherwise (a stale or hash-based file)
    it is returned unchanged, and the interpreter compiles the source as it would have."""
    size, flagged = pyc_layout(python)
    if len(data) < size:
        return data
    at = 4
    if flagged:
        (flags,) = struct.unpack_from("<I", data, 4)
        if flags != 0:  # hash-based (PEP 552): valid whatever the times
            return data
        at = 8
    (mtime,) = struct.unpack_from("<I", data, at)
    if mtime != source_mtime & 0xFFFFFFFF:
        return data
    if size > 8:
        (recorded_size,) = struct.unpack_from("<I", data, at + 4)
        if recorded_size != source_size & 0xFFFFFFFF:
            return data
    return data[:at] + struct.pack("<I", epoch & 0xFFFFFFFF) + data[at + 4:]


def pyc_source(rel: str) -> str | None:
    """The source a bytecode file belongs to: ``a/__pycache__/m.cpython-310.pyc`` -> ``a/m.py``,
    ``a/m.pyc`` (Python 2) -> ``a/m.py``; None for another file."""
    if not rel.endswith(".pyc"):
        return None
    folder, _, name = rel.rpartition("/")
    if folder.endswith("__pycache__") and (folder == "__pycache__" or folder.endswith("/__pycache__")):
        parent = folder[: -len("__pycache__")].rstrip("/")
        module = name.split(".")[0]
        return f"{parent}/{module}.py" if parent else f"{module}.py"
    return rel[:-1]


def _is_elf(path: Path) -> bool:
    """Whether ``path`` is an ELF executable or shared object (what the loader loads; an object
    file such as the interpreter's ``python.o`` is neither)."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return False
    return len(head) == 18 and head[:4] == b"\x7fELF" and head[16] in (2, 3)  # e_type ET_EXEC, ET_DYN


@dataclass
class _Tree:
    """One host tree placed at ``image`` in the image: its entries and its ELF files."""

    image: str
    entries: list[oci.Entry] = field(default_factory=list)
    elf: list[Path] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # file names it holds (a library found "within")
    pycs_clamped: int = 0


def _tree_entries(root: Path, image: str, *, files: dict[str, tuple[str | None, bool]] | None,
                  links: dict[str, str] | None, reloc: Relocation | None, python: str,
                  skip: Sequence[str] = ()) -> _Tree:
    """Entries placing the host tree ``root`` at ``image``. ``files``/``links``: the tree's
    manifest (rel -> (sha256, executable); rel -> target), whose files are the ones taken and
    checked as written; without one, every file of the tree. ``reloc``: rewrite small non-ELF
    files and absolute links; bytecode files get the image's time (``clamp_pyc``). ``skip``:
    relative folders left out."""
    tree = _Tree(image.strip("/"))
    dest = tree.image
    skipped = tuple(s.rstrip("/") + "/" for s in skip)
    skip_files = {s.rstrip("/") for s in skip}
    walked_files: dict[str, tuple[str | None, bool]] = {}
    walked_links: dict[str, str] = {}
    tree.entries.append(oci.dir_entry(dest, readable(root.stat().st_mode)))
    for d, dirnames, filenames in os.walk(root):
        rd = os.path.relpath(d, root)
        rd = "" if rd == "." else rd + "/"
        for n in list(dirnames):
            p = os.path.join(d, n)
            if (rd + n + "/").startswith(skipped):
                dirnames.remove(n)  # not walked into
            elif os.path.islink(p):
                walked_links[rd + n] = os.readlink(p)
            else:
                tree.entries.append(oci.dir_entry(f"{dest}/{rd}{n}", readable(os.lstat(p).st_mode)))
        for n in filenames:
            p = os.path.join(d, n)
            if rd + n in skip_files:
                continue
            if os.path.islink(p):
                walked_links[rd + n] = os.readlink(p)
            else:
                walked_files[rd + n] = (None, False)
    if files is None or links is None:
        files, links = walked_files, walked_links
    for rel, target in links.items():
        if rel.startswith(skipped):
            continue
        tree.entries.append(oci.link_entry(f"{dest}/{rel}", reloc.link(target) if reloc else target))
    stats = {rel: (root / rel).lstat() for rel in files if not rel.startswith(skipped)}
    for rel, st in stats.items():
        sha = files[rel][0]
        host = root / rel
        tree.names.add(rel.rsplit("/", 1)[-1])
        transform: Callable[[bytes], bytes] | None = None
        elf = _is_elf(host)
        if elf:
            tree.elf.append(host)  # binary: its paths stay (Relocation.text leaves any binary file alone)
        src = pyc_source(rel)
        if src is not None and src in stats:
            s = stats[src]
            source_changes = False
            if reloc is not None and s.st_size <= TEXT_LIMIT:
                source_changes = reloc.mentions((root / src).read_bytes())
            if not source_changes:
                mtime, size = int(s.st_mtime), s.st_size
                transform = partial(clamp_pyc, source_mtime=mtime, source_size=size, python=python)
                tree.pycs_clamped += 1
        elif reloc is not None and not elf and st.st_size <= TEXT_LIMIT:
            transform = partial(reloc.text, where=f"{dest}/{rel}")
        tree.entries.append(oci.Entry(f"{dest}/{rel}", "file", readable(st.st_mode), source=host, sha256=sha,
                                      transform=transform))
    return tree


def readable(mode: int) -> int:
    """A host file's or folder's mode in the image: readable (and a folder enterable) by every
    user, since a container may run as any; write bits as they were (the staged source stays
    read-only). A temporary folder's 0700 (an environment's root) would lock out all but root."""
    bits = stat.S_IMODE(mode) | 0o444
    return bits | 0o111 if stat.S_ISDIR(mode) else bits


def _manifest(tree: Path) -> tuple[dict[str, tuple[str | None, bool]], dict[str, str]]:
    data = json.loads(verify.manifest_path(tree).read_text(encoding="utf-8"))
    return {rel: (v[0], bool(v[2])) for rel, v in data["files"].items()}, dict(data["links"])


# ------------------------------------------------------------------ shared libraries

@dataclass(frozen=True)
class Needs:
    """What ``ldd`` says the ELF files need: the host libraries (soname -> path), the dynamic
    loader, the libraries found in the image's own trees, and the ones found nowhere."""

    libraries: dict[str, str]
    loader: str | None
    within: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]  # (soname, the file that needs it)


_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-f]+\))?\s*$")
_LDD_BARE = re.compile(r"^\s*(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def parse_ldd(output: str, files: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
    """``ldd FILE...``'s output as file -> [(soname or loader path, resolved path or None)].
    With one file ldd prints no ``FILE:`` header."""
    out: dict[str, list[tuple[str, str | None]]] = {f: [] for f in files}
    current = files[0] if len(files) == 1 else None
    for line in output.splitlines():
        if not line.startswith(("\t", " ")) and line.endswith(":") and line[:-1] in out:
            current = line[:-1]
            continue
        if current is None:
            continue
        m = _LDD_LINE.match(line)
        if m:
            name, where = m.group(1), m.group(2)
            out[current].append((name, None if where == "not found" else where))
            continue
        m = _LDD_BARE.match(line)
        if m:
            out[current].append((m.group(1), m.group(1)))
    return out


def shared_libraries(files: Sequence[Path], inside: Sequence[Path], within_names: set[str], *,
                     box: sandbox.Sandbox, mounts: sandbox.Mounts, runner: Runner = proc.run) -> Needs:
    """The libraries ``files`` need, by ``ldd`` run in ``box`` (they are a submission's
    environment's: foreign code is only ever loaded in the sandbox; ``ldd`` maps the libraries
    and runs none of their code). A library resolved into one of ``inside`` is the image's own;
    one not found whose name is among ``within_names`` is a library of the environment that its
    dependent finds through its own run path (a wheel's ``.libs`` folder)."""
    libs: dict[str, str] = {}
    loader: str | None = None
    within: set[str] = set()
    missing: list[tuple[str, str]] = []
    roots = [os.path.realpath(p) for p in inside] + [os.path.abspath(p) for p in inside]
    names = [str(f) for f in files]
    for i in range(0, len(names), LDD_BATCH):
        batch = names[i:i + LDD_BATCH]
        done = runner(box.wrap(["ldd", *batch], mounts), env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                      check=False, timeout=600)
        parsed = parse_ldd(done.stdout, batch)
        if not any(parsed.values()) and done.returncode != 0:
            raise ExportError(f"ldd could not read the environment's libraries (exit {done.returncode}): "
                              f"{done.stderr.strip()[-300:]}")
        for f, deps in parsed.items():
            for name, where in deps:
                if name.startswith("linux-vdso") or name.startswith("linux-gate"):
                    continue
                if where is None:
                    if name in within_names:
                        within.add(name)
                    else:
                        missing.append((name, f))
                    continue
                if name.startswith("/") and name == where:  # the dynamic loader (PT_INTERP)
                    loader = where
                    continue
                real = os.path.realpath(where)
                if any(real == r or real.startswith(r + "/") or where.startswith(r + "/") for r in roots):
                    within.add(name)
                    continue
                libs.setdefault(name, where)
    return Needs(dict(sorted(libs.items())), loader, tuple(sorted(within)), tuple(sorted(set(missing))))


def loader_search_dirs(loader: str, runner: Runner = proc.run) -> list[str]:
    """The folders the dynamic loader searches without a cache (``ld.so --help``, glibc 2.33 on):
    the image has no ``/etc/ld.so.cache``, so a library is found there or through a run path."""
    try:
        done = runner([loader, "--help"], check=False, timeout=30)
    except PyreproError:
        return []
    return [ln.split("(system search path)")[0].strip() for ln in done.stdout.splitlines()
            if "(system search path)" in ln]


def replicate(path: str, out: dict[str, oci.Entry], depth: int = 0) -> str:
    """Entries that place the host file ``path`` at the same path in the image, each link on
    the way (``/lib -> usr/lib``, ``libz.so.1 -> libz.so.1.2.13``) a link there too; the real
    path of the file (relative to the root) is returned."""
    if depth > 40:
        raise ExportError(f"{path}: too many levels of links")
    parts = [p for p in path.split("/") if p]
    cur = "/"
    for i, part in enumerate(parts):
        nxt = os.path.join(cur, part)
        rel = nxt.lstrip("/")
        st = os.lstat(nxt)
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(nxt)
            out.setdefault(rel, oci.link_entry(rel, target))
            resolved = os.path.normpath(os.path.join(cur, target))  # cur holds no link: exact
            return replicate(os.path.join(resolved, *parts[i + 1:]), out, depth + 1)
        if i == len(parts) - 1:
            if not stat.S_ISREG(st.st_mode):
                raise ExportError(f"{nxt}: not a regular file")
            out.setdefault(rel, oci.Entry(rel, "file", stat.S_IMODE(st.st_mode), source=Path(nxt)))
            return rel
        out.setdefault(rel, oci.dir_entry(rel, stat.S_IMODE(st.st_mode)))
        cur = nxt
    raise ExportError(f"{path}: not a file")


def _spellings(path: str) -> list[str]:
    """The names dpkg may know a library by: as the loader found it, its real path, and on a
    merged-/usr system the other of ``/lib/...`` and ``/usr/lib/...``."""
    out = [path, os.path.realpath(path)]
    for p in list(out):
        if p.startswith("/usr/"):
            out.append(p[4:])
        elif p.startswith(("/lib", "/bin", "/sbin")):
            out.append("/usr" + p)
    return list(dict.fromkeys(out))


def package_of(path: str, packages: dict[str, str]) -> str | None:
    return next((packages[p] for p in _spellings(path) if p in packages), None)


def debian_packages(paths: Iterable[str], runner: Runner = proc.run) -> dict[str, str]:
    """The Debian package (``name:arch version``) each host file comes from, where dpkg knows it
    (keyed by every spelling of ``_spellings``)."""
    wanted = sorted({s for p in paths for s in _spellings(p)})
    if not wanted or proc.which("dpkg-query") is None:
        return {}
    done = runner(["dpkg-query", "-S", *wanted], check=False, timeout=120)
    owner: dict[str, str] = {}
    for line in done.stdout.splitlines():
        pkg, sep, p = line.partition(": ")
        if sep and "," not in pkg and not pkg.startswith("diversion by"):
            owner[p.strip()] = pkg.strip()
    if not owner:
        return {}
    versions: dict[str, str] = {}
    done = runner(["dpkg-query", "-W", "-f", "${binary:Package} ${Version}\\n", *sorted(set(owner.values()))],
                  check=False, timeout=120)
    for line in done.stdout.splitlines():
        name, _, version = line.partition(" ")
        versions[name] = version
    return {p: f"{pkg} {versions.get(pkg, '')}".strip() for p, pkg in owner.items()}


# ------------------------------------------------------------------ the image

@dataclass(frozen=True)
class Exported:
    """What ``export_model`` made."""

    model: str
    archive: Path
    reference: str
    size: int
    manifest_digest: str
    config_digest: str
    layers: tuple[dict[str, Any], ...]
    entrypoint: tuple[str, ...]
    record: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "archive": str(self.archive), "reference": self.reference, "size": self.size,
                "manifest_digest": self.manifest_digest, "config_digest": self.config_digest,
                "layers": list(self.layers), "entrypoint": list(self.entrypoint),
                "missing_libraries": self.record["libraries"]["missing"]}


def image_name(spec: ModelSpec) -> str:
    return "pyrepro/" + re.sub(r"[^a-z0-9._-]+", "-", spec.name.lower()).strip("-._")


def image_tag(built: BuiltModel) -> str:
    return f"{built.env_key[:10]}-{built.src_key[:10]}"


def entrypoint(spec: ModelSpec) -> list[str]:
    """The model's uniform CLI in the image: its entry command (as ``pyrepro.run.run_model``
    runs it) with the run flags pointing at the image's folders."""
    script = patches.entry_script(spec.entry)
    after = list(spec.entry[spec.entry.index(script) + 1:])
    return [f"{ENV}/bin/{spec.entry[0]}", f"{MODEL}/src/{script}", *after, "--benchmark", spec.default_benchmark,
            "--benchmarks-dir", BENCHMARKS, "--data-dir", DATASETS, "--output-dir", OUTPUT]


def image_env(spec: ModelSpec) -> dict[str, str]:
    """The image's environment: what ``pyrepro.run.run_model`` sets for a run, at image paths."""
    env = {
        "PATH": f"{ENV}/bin:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{MODEL}/runtime",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "LANG": "C.UTF-8",
        "HOME": "/tmp",
        "XDG_CACHE_HOME": "/tmp/.cache",
        "MPLCONFIGDIR": "/tmp/.mpl",
        "MPLBACKEND": "Agg",
        "TF_CPP_MIN_LOG_LEVEL": "1",
        "PYREPRO_BENCHMARKS_DIR": BENCHMARKS,
        "PYREPRO_DATA_DIR": DATASETS,
    }
    if spec.gpu == "none":  # as the GPU wrapper and the local backend: frameworks do not probe
        env |= {"CUDA_VISIBLE_DEVICES": "", "PYREPRO_GPU": "none"}
    return env


def _system_layer(needs: Needs, tools: dict[str, str], search_dir: str | None, interp: _Tree,
                  packages: dict[str, str]) -> tuple[list[oci.Entry], list[dict[str, Any]]]:
    entries: dict[str, oci.Entry] = {}
    libraries: list[dict[str, Any]] = []
    if needs.loader:
        real = replicate(needs.loader, entries)
        libraries.append({"name": os.path.basename(needs.loader), "path": "/" + real,
                          "sha256": hashlib.sha256(Path("/" + real).read_bytes()).hexdigest(),
                          "package": package_of(needs.loader, packages), "role": "loader"})
    for name, where in needs.libraries.items():
        real = replicate(where, entries)
        libraries.append({"name": name, "path": "/" + real,
                          "sha256": hashlib.sha256(Path("/" + real).read_bytes()).hexdigest(),
                          "package": package_of(where, packages)})
        if search_dir and os.path.dirname(where) != search_dir and os.path.dirname("/" + real) != search_dir:
            link = f"{search_dir.strip('/')}/{name}"  # found without ld.so.cache: in the loader's folder
            entries.setdefault(link, oci.link_entry(link, "/" + real))
    for where in tools.values():
        replicate(where, entries)
    # the interpreter's own libraries (libpython) reached through its build prefix's run path:
    # inside the image that path is gone, so the loader's folder links to them
    if search_dir:
        for e in interp.entries:
            name = e.path.rsplit("/", 1)[-1]
            if e.kind == "file" and name in needs.within and name.startswith("lib") and ".so" in name:
                link = f"{search_dir.strip('/')}/{name}"
                entries.setdefault(link, oci.link_entry(link, "/" + e.path))
    for rel, mode in FOLDERS.items():
        entries.setdefault(rel, oci.dir_entry(rel, mode))
    entries["etc/passwd"] = oci.file_entry("etc/passwd", PASSWD)
    entries["etc/group"] = oci.file_entry("etc/group", GROUP)
    return list(entries.values()), libraries


def _find_tools(spec: ModelSpec) -> tuple[dict[str, str], list[str]]:
    """The run-time tools model.toml names, from the system's folders (python and ipython are
    the environment's), and ``sh`` (os.system and subprocess with shell=True need it)."""
    found: dict[str, str] = {}
    absent: list[str] = []
    for t in ("sh", *spec.tools):
        if t in ("python", "ipython") or t.startswith("python"):
            continue
        where = "/bin/sh" if t == "sh" and os.path.exists("/bin/sh") else \
            shutil.which(t, path="/usr/local/bin:/usr/bin:/bin")
        if where:
            found[t] = where
        else:
            absent.append(t)
    return found, absent


def export_model(spec: ModelSpec, paths: Paths, *, out: Path | None = None, mirror: Path | None = None,
                 runner: Runner = proc.run, progress: Progress = NULL_PROGRESS, compress: bool = True,
                 built: BuiltModel | None = None) -> Exported:
    """Build (cache hits are cheap) and verify the model, then write its image archive to
    ``out`` (default ``<cache>/exports/<name>-<tag>.oci.tar``)."""
    from pyrepro.backends import local
    from pyrepro.run import pyrepro_identity, verify_built

    label = f"export {spec.name}"
    b = built or local.build(spec, paths, mirror=mirror, runner=runner, progress=progress)
    checked = verify_built(spec, b)
    progress.start(label, total=7)
    progress.advance(label, 1, "environment and source verified")
    prefixes = sandbox.interpreter_paths(b.env_dir)
    if len(prefixes) != 1:
        raise ExportError(
            f"the environment of {spec.name} was made from "
            + (f"{len(prefixes)} interpreter installations" if prefixes else "the system's interpreter (under /usr)")
            + "; an image takes one installation of its own",
            hint="make the environment with a standalone CPython (pyenv, or python-build-standalone through uv)")
    prefix = prefixes[0]
    staged = b.src_dir.parent
    reloc = Relocation.of({b.env_dir: ENV, prefix: PYTHON})
    cfg_file = b.env_dir / "pyvenv.cfg"  # a Python 2 virtualenv has none
    cfg = cfg_file.read_text(encoding="utf-8", errors="replace") if cfg_file.is_file() else ""
    system_site = re.search(r"^include-system-site-packages\s*=\s*true", cfg, re.M | re.I) is not None
    version_dir = next((p.name for p in sorted((prefix / "lib").glob("python*")) if p.is_dir()), "")
    skip = {f"lib/{version_dir}/test": LEFT_OUT["test"]}
    if not system_site:
        skip[f"lib/{version_dir}/site-packages"] = LEFT_OUT["site-packages"]
    for a in sorted((prefix / "lib" / version_dir).glob("config-*/libpython*.a")) if version_dir else []:
        skip[str(a.relative_to(prefix))] = LEFT_OUT["static"]
    env_files, env_links = _manifest(b.env_dir)
    src_files, src_links = _manifest(staged)
    interp = _tree_entries(prefix, PYTHON, files=None, links=None, reloc=reloc, python=b.python, skip=list(skip))
    env = _tree_entries(b.env_dir, ENV, files=env_files, links=env_links, reloc=reloc, python=b.python)
    model = _tree_entries(staged, MODEL, files=src_files, links=src_links, reloc=None, python=b.python)
    progress.advance(label, 1, f"{len(env.entries)} environment and {len(interp.entries)} interpreter entries")
    tools, absent_tools = _find_tools(spec)
    box = sandbox.choose()
    mounts = sandbox.for_environment(b.env_dir)
    needs = shared_libraries([*interp.elf, *env.elf, *map(Path, tools.values())], [b.env_dir, prefix],
                             env.names | interp.names, box=box, mounts=mounts, runner=runner)
    if needs.loader is None:
        raise ExportError(f"ldd named no dynamic loader for the interpreter of {spec.name}")
    search = loader_search_dirs(needs.loader, runner)
    search_dir = os.path.realpath(search[0]) if search else os.path.dirname(os.path.realpath(
        needs.libraries.get("libc.so.6", needs.loader)))
    packages = debian_packages([needs.loader, *needs.libraries.values(), *tools.values()], runner)
    system, libraries = _system_layer(needs, tools, search_dir, interp, packages)
    progress.advance(label, 1, f"{len(libraries)} shared libraries")
    series = patches.load_series(paths.patch_dir(spec.name))
    lock_path = spec.dir / "pdm.lock"
    ident = pyrepro_identity(paths)
    from pyrepro.backends.local import host_platform

    record: dict[str, Any] = {
        "schema": 1,
        "kind": "pyrepro export",
        "model": spec.name, "title": spec.title,
        "source": {"repository": spec.source.repository, "commit": spec.source.commit,
                   "subdir": spec.source.subdir, "tree": spec.source.tree},
        "lock": {"file": f"models/{spec.name}/pdm.lock", "sha256": hashlib.sha256(lock_path.read_bytes()).hexdigest()},
        "patches": [{"file": p.path.name, "category": p.category, "sha256": p.sha256} for p in series],
        "environment": {"backend": b.backend, "env_key": b.env_key, "src_key": b.src_key, "python": b.python,
                        "platform": host_platform()},
        "verified": [{"what": c.what, "files": c.files,
                      "scope": "every file and link against the manifest written when the tree was made; "
                               "the bytes written into the image were hashed again and compared with it"}
                     for c in checked],
        "pyrepro": ident,
        "gpu": spec.gpu,
        "image": {"interpreter": PYTHON, "environment": ENV, "source": f"{MODEL}/src", "runtime": f"{MODEL}/runtime",
                  "record": RECORD, "entrypoint": entrypoint(spec), "env": image_env(spec), "workdir": WORK,
                  "benchmarks_dir": BENCHMARKS, "data_dir": DATASETS, "output_dir": OUTPUT,
                  "test_args": list(spec.test.args)},
        "libraries": {"found_with": f"ldd, in the sandbox ({box.kind})" if box.active else
                      "ldd, NOT in a sandbox (--no-sandbox)", "copied": libraries,
                      "within_image": list(needs.within),
                      "missing": [{"name": n, "needed_by": _image_path(f, reloc)} for n, f in needs.missing]},
        "tools": {"included": {t: {"path": w, "package": package_of(w, packages)} for t, w in tools.items()},
                  "absent": absent_tools},
        "left_out": [f"{PYTHON}/{s}: {why}" for s, why in skip.items()],
    }
    labels = {
        "org.opencontainers.image.title": f"{spec.name}: {spec.title}",
        "org.opencontainers.image.source": spec.source.repository,
        "org.opencontainers.image.revision": spec.source.commit,
        "org.opencontainers.image.created": oci.CREATED,
        "io.pyrepro.model": spec.name,
        "io.pyrepro.source.subdir": spec.source.subdir,
        "io.pyrepro.source.tree": spec.source.tree or "",
        "io.pyrepro.lock.sha256": record["lock"]["sha256"],
        "io.pyrepro.env-key": b.env_key,
        "io.pyrepro.src-key": b.src_key,
        "io.pyrepro.python": b.python,
        "io.pyrepro.patches": json.dumps([f"{p['file']} {p['sha256']}" for p in record["patches"]]),
        "io.pyrepro.version": str(ident.get("version") or ""),
        "io.pyrepro.commit": str(ident.get("commit") or ""),
        "io.pyrepro.record": RECORD,
    }
    target = out or paths.cache / "exports" / f"{spec.name}-{image_tag(b)}.oci.tar"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=target.parent) as work:
        blobs = Path(work)
        plan = [("system", "the dynamic loader, the C library and every shared library the interpreter, the "
                           "environment and the tools need (from the build machine), /bin/sh, folders", system),
                ("interpreter", f"CPython {b.python} at {PYTHON}", interp.entries),
                ("environment", f"the locked packages at {ENV}, relocated", env.entries),
                ("model", f"the patched source at {MODEL}/src, pyrepro's runtime at {MODEL}/runtime", model.entries)]
        layers: list[oci.Blob] = []
        for what, _desc, entries in plan:
            layers.append(oci.write_layer(entries, blobs, compress=compress))
            progress.advance(label, 1, f"{what} layer: {layers[-1].size >> 20} MiB")
        record["relocated"] = {"files": sorted(set(reloc.changed)),
                               "bytecode_files_dated": interp.pycs_clamped + env.pycs_clamped}
        record["layers"] = [{"what": what, "diff_id": blob.diff_id} for (what, _d, _e), blob in zip(plan, layers,
                                                                                                   strict=True)]
        rec_bytes = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
        layers.append(oci.write_layer([oci.file_entry(RECORD[1:], rec_bytes)], blobs, compress=compress))
        history = [f"pyrepro export: {what}: {desc}" for what, desc, _e in plan] + \
            [f"pyrepro export: the record at {RECORD}"]
        config = oci.image_config(layers, entrypoint=entrypoint(spec), env=image_env(spec), workdir=WORK,
                                  labels=labels, history=history,
                                  architecture={"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine,
                                                                                          os.uname().machine))
        archive = oci.write_archive(target, layers, config, name=image_name(spec), tag=image_tag(b),
                                    annotations={"org.opencontainers.image.source": spec.source.repository,
                                                 "org.opencontainers.image.revision": spec.source.commit})
    progress.finish(label, f"{archive.size >> 20} MiB")
    names = [w for w, _d, _e in plan] + ["record"]
    return Exported(spec.name, target, archive.reference, archive.size, archive.manifest.digest, archive.config.digest,
                    tuple({"what": n, "digest": blob.digest, "diff_id": blob.diff_id, "size": blob.size,
                           "entries": blob.entries} for n, blob in zip(names, layers, strict=True)),
                    tuple(entrypoint(spec)), record)


def _image_path(host: str, reloc: Relocation) -> str:
    return reloc.link(host)
