"""The top-level modules a distribution provides: the one computation, used for a wheel's file
list on the index (``pyrepro.index``), an installed distribution's files (``pyrepro.resolve``),
and inside a model environment by the import check (``pyrepro.run`` sends this module's source
to the environment's own interpreter, so it is written for every Python pyrepro targets, 2.7 and
3.6 included: no annotations evaluated at run time, standard library only).
"""

import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_MODULE_FILE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\.[^/]*)?\.(py|so|pyd)$")


def top_levels_of(paths):
    """Importable top-level names from a distribution's file paths (a wheel's file list or an
    installed RECORD, ``/``-separated): packages, modules, extension modules (``x.cpython-311-...so``);
    metadata folders, ``bin/`` and paths outside site-packages (``../../bin/x``) left out; a wheel's
    ``.data/purelib|platlib`` contents count as top level. A frozenset of names."""
    out = set()
    for n in paths:
        parts = str(n).replace("\\", "/").split("/")
        if parts[0].endswith(".data") and len(parts) > 3 and parts[1] in ("purelib", "platlib"):
            parts = parts[2:]
        head = parts[0]
        if not head or head.endswith((".dist-info", ".data", ".egg-info")) or head in ("..", "bin"):
            continue
        if len(parts) > 1:
            if _IDENT.match(head):
                out.add(head)
            continue
        m = _MODULE_FILE.match(head)
        if m:
            out.add(m.group(1))
    return frozenset(out)


# Files at an sdist's root that are build or project machinery, never a module the project ships.
_SDIST_NOT_MODULES = frozenset(("setup", "conftest", "noxfile", "fabfile", "tasks", "versioneer", "build",
                                "test", "tests", "docs", "doc", "examples", "example", "benchmarks"))


def sdist_top_levels(paths):
    """Importable top-level names an sdist's member paths show (``x-1.0/x/__init__.py``): packages
    (a folder with its own ``__init__.py``), modules at the project root or under ``src/`` and
    Cython modules (``.pyx``) at the root;
    build machinery (``setup.py``, ``versioneer.py``) and test/doc folders left out. A frozenset."""
    out = set()
    for n in paths:
        parts = str(n).replace("\\", "/").strip("/").split("/")[1:]  # the sdist's own top folder goes
        if parts[:1] == ["src"]:
            parts = parts[1:]
        if len(parts) == 2 and parts[1] == "__init__.py" and _IDENT.match(parts[0]):
            out.add(parts[0])
        elif len(parts) == 1:
            m = _MODULE_FILE.match(parts[0])
            if m and m.group(3) == "py" and not m.group(2):
                out.add(m.group(1))
            elif parts[0].endswith(".pyx") and _IDENT.match(parts[0][:-4]):
                out.add(parts[0][:-4])  # a Cython extension module at the root (sparsesvd.pyx)
    return frozenset(t for t in out if t.lower() not in _SDIST_NOT_MODULES)


def said_top_levels(top_level_txt):
    """The names an sdist's own ``*.egg-info/top_level.txt`` gives (what the distribution says of
    itself; setuptools writes it), importable names only. A frozenset, empty when it says none."""
    return frozenset(t for t in (top_level_txt or "").split() if _IDENT.match(t)
                     and t.lower() not in _SDIST_NOT_MODULES)


def distribution_top_levels(top_level_txt, paths):
    """An installed distribution's top-level modules: its ``top_level.txt`` when it has one (what
    the distribution says of itself), else derived from its files (``top_levels_of``)."""
    said = [t for t in (top_level_txt or "").split() if t]
    return frozenset(said) if said else top_levels_of(paths)


def installed_distributions(entries):
    """(name, top-level modules) of every distribution installed in the folders ``entries`` (a
    ``sys.path``), read from their ``*.dist-info`` folders (METADATA's ``Name``, ``top_level.txt``,
    ``RECORD``) without ``importlib.metadata``, which CPython 3.6 and 3.7 lack. Python 2 runs it
    too (a Python 2 submission's environment): ``io.open``, and IOError, which is no OSError there."""
    import io
    import os

    for entry in entries:
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for d in names:
            if not d.endswith(".dist-info"):
                continue
            folder = os.path.join(entry, d)
            name = ""
            try:
                with io.open(os.path.join(folder, "METADATA"), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if not line.strip():
                            break
                        if line.lower().startswith("name:"):
                            name = line.split(":", 1)[1].strip()
                            break
            except (IOError, OSError):
                continue
            if not name:
                continue
            said = None
            try:
                with io.open(os.path.join(folder, "top_level.txt"), encoding="utf-8", errors="replace") as fh:
                    said = fh.read()
            except (IOError, OSError):
                pass
            files = []
            try:
                with io.open(os.path.join(folder, "RECORD"), encoding="utf-8", errors="replace") as fh:
                    files = [line.split(",", 1)[0] for line in fh if line.strip()]
            except (IOError, OSError):
                pass
            yield name, distribution_top_levels(said, files)
