"""Declared dependencies: what a contribution says it needs.

* JARVIS ``metadata.json``: ``software_used``, a comma string ("jarvis-tools,numpy,torch");
* MatBench ``info.json``: ``requirements`` in any shape (list, dict name -> version, a string
  of names or free text); free text gets a "not machine-readable" warning;
* ``environment.yml``: conda names (mapped: py-xgboost-gpu -> xgboost, pytorch -> torch) and
  the ``pip:`` sub-list; conda system packages (the [conda_system] table: python, cudatoolkit, lib*) are left out;
* ``requirements.txt``: PEP 508 lines; ``-e git+...#egg=x`` and ``x @ file:///...`` entries
  are kept by name with a warning that they are not installable as written.

Every problem is a warning with the file and line; nothing here raises on bad input.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from pyrepro.resolve import conda_system_reason, conda_to_pypi, module_alias, not_a_package_reason

# Keys of a requirements dict that hold a group of packages, not a package of that name.
GROUP_KEYS = frozenset({"python", "pip", "pypi", "conda", "packages", "dependencies", "requirements", "other",
                        "python_packages", "libraries", "software"})
FREE_TEXT = re.compile(r"[^\w.,\-\[\]<>=!~ \t;:@/+*'\"]")


@dataclass(frozen=True)
class Declared:
    name: str  # canonical distribution name
    spec: str  # as written (or '')
    path: str
    line: int | None
    cell: int | None = None  # notebook cell of a ``%pip install`` line
    commented: bool = False  # from an install line kept as a comment (weaker: see scan.weigh_commented)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "spec": self.spec,
                                  "location": {"path": self.path, "line": self.line, "cell": self.cell}}
        if self.commented:
            out["commented"] = True
        return out


@dataclass(frozen=True)
class MetaScan:
    declared: tuple[Declared, ...]
    warnings: tuple[tuple[str, int | None, str], ...]  # (path, line, message)


def _line_of(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return None


_SIMPLE_REQ = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:(?:==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+)?$")


def vcs_source(spec: str) -> tuple[str, str, str] | None:
    """(name, repository URL, ref) of a VCS requirement (``git+https://host/o/repo@ref#egg=x``,
    ``name @ git+https://...@ref``, ``-e git+...``); None for anything else. The name is the
    egg/PEP 508 name, else the repository's last path segment; ref is "" when none is given."""
    s = spec.strip()
    s = re.sub(r"^(-e|--editable)\s+", "", s)
    named = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*@\s*(.+)$", s)
    name = named.group(1) if named else ""
    if named:
        s = named.group(3).strip()
    m = re.match(r"^(git|hg|svn|bzr)\+(\S+)$", s.split(";")[0].strip())
    if not m:
        return None
    url = m.group(2)
    egg = re.search(r"#egg=([A-Za-z0-9_.\-]+)", url)
    url = url.split("#", 1)[0]
    ref = ""
    scheme_end = url.find("://") + 3 if "://" in url else 0
    at = url.rfind("@")
    if at > scheme_end and "/" not in url[at:]:
        url, ref = url[:at], url[at + 1:]
    base = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return (name or (egg.group(1) if egg else base)), url, ref


def _req(s: str, path: str, line: int | None, warnings: list[tuple[str, int | None, str]]) -> Declared | None:
    s = s.strip()
    if not s:
        return None
    egg = re.search(r"#egg=([A-Za-z0-9_.\-]+)", s)
    if s.startswith(("-e ", "--editable")) or re.match(r"(git|hg|svn|bzr)\+", s):
        src = vcs_source(s)
        name = egg.group(1) if egg else (src[0] if src else "")
        if name:
            warnings.append((path, line, f"{s[:80]!r} is a VCS source, not a PyPI name: it becomes an extra source "
                                         "of the model (a full commit id) or a review item"))
            return Declared(canonicalize_name(name), s, path, line)
        warnings.append((path, line, f"{s[:80]!r} is a VCS/editable entry whose name cannot be read; ignored"))
        return None
    simple = _SIMPLE_REQ.match(s)
    if simple:  # 'name' / 'name==1.2' (most lines of exported environments): no full PEP 508 parse needed
        return Declared(canonicalize_name(simple.group(1)), s, path, line)
    if s.startswith("-"):
        if re.match(r"^(-r|-c|--requirement|--constraint)\b", s):
            warnings.append((path, line, f"{s[:80]!r} names another requirements file; not followed (scan it too)"))
        return None
    try:
        r = Requirement(s)
    except InvalidRequirement:
        # conda-style "name=1.2=build" or "name==1.2=build"
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(?:={1,2}\s*([^=\s]+))?", s)
        if not m:
            warnings.append((path, line, f"cannot read requirement {s[:80]!r}"))
            return None
        if s[m.end():].strip() and not re.fullmatch(r"=[\w.*+!]+", s[m.end():].strip()):  # not a conda build string
            warnings.append((path, line, f"cannot read requirement {s[:80]!r} completely; took the name "
                                         f"{m.group(1)!r}"))
        return Declared(canonicalize_name(m.group(1)), s, path, line)
    if r.url and r.url.startswith("file:"):
        warnings.append((path, line, f"{r.name} points at a local file ({r.url[:60]}); not installable as written"))
    return Declared(canonicalize_name(r.name), s, path, line)


def parse_software_used(text: str, path: str) -> MetaScan:
    warnings: list[tuple[str, int | None, str]] = []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return MetaScan((), ((path, exc.lineno, f"not valid JSON ({exc.msg}); declared dependencies not read"),))
    if not isinstance(data, dict):
        return MetaScan((), ((path, 1, "not a JSON object; declared dependencies not read"),))
    sw = data.get("software_used")
    if sw is None:
        return MetaScan((), ())
    items = sw if isinstance(sw, list) else str(sw).split(",") if isinstance(sw, str) else []
    line = _line_of(text, "software_used")
    out = [_alias(_conda(d)) for s in items if isinstance(s, str) and (d := _req(s, path, line, warnings))]
    return MetaScan(tuple(d for d in out if not_a_package_reason(d.name) is None), tuple(warnings))


def _alias(d: Declared) -> Declared:
    """``software_used`` often names the import rather than the distribution (``sklearn``):
    an exact module name of the reviewed mapping becomes its distribution."""
    mapped = module_alias(d.spec.strip()) or module_alias(d.name)
    return dataclasses.replace(d, name=mapped) if mapped and mapped != d.name else d


def _conda(d: Declared) -> Declared:
    """Map a conda package name to its PyPI name (py-xgboost-gpu -> xgboost)."""
    mapped = conda_to_pypi(d.name)
    return dataclasses.replace(d, name=canonicalize_name(mapped)) if mapped else d


def _requirements(req: object, path: str, line: int | None, warnings: list[tuple[str, int | None, str]],
                  out: list[Declared], depth: int = 0) -> None:
    """Declared names of a ``requirements`` value of any shape: a list of specs, a dict of
    name -> version(s), a dict of groups (``{"python": ["numpy==1.2"]}``), a string of names,
    or free text (a warning)."""
    if isinstance(req, dict):
        for k, v in req.items():
            if depth < 3 and ((isinstance(v, (dict, str)) and str(k).lower() in GROUP_KEYS) or (isinstance(v, list) and v and all(
                    isinstance(x, str) and re.match(r"^[A-Za-z]", x.strip()) for x in v))):
                # a group ({"python": ["numpy==1.2", ...]}, {"pip": {...}}), not versions of a package
                _requirements(v, path, line, warnings, out, depth + 1)
                continue
            versions = v if isinstance(v, list) else [v]
            specs = [f"{k}=={x}" if re.fullmatch(r"[\w.+!*]+", x) else f"{k}{x}" if re.match(r"^[<>=!~]", x) else str(k)
                     for x in versions if isinstance(x, str)] or [str(k)]
            if len(specs) > 1:
                warnings.append((path, line, f"{k} is pinned to several versions ({', '.join(map(str, versions))})"))
            for spec in specs:
                if (d := _req(spec, path, line, warnings)):
                    out.append(d)
    elif isinstance(req, list):
        for item in req:
            if isinstance(item, str) and (d := _req(item, path, line, warnings)):
                out.append(d)
            elif not isinstance(item, str):
                warnings.append((path, line, f"requirement {item!r} is not a string; ignored"))
    elif isinstance(req, str):
        if FREE_TEXT.search(req) or (len(req.split()) > 3 and "," not in req):
            warnings.append((path, line, "requirements is free text, not machine-readable; list the packages as "
                                         "[\"name==version\", ...] to have them checked"))
            for tok in re.findall(r"\b([A-Za-z][A-Za-z0-9_\-]+)\s*(?:==|>=|v)?\s*\d[\w.]*", req):
                out.append(Declared(canonicalize_name(tok), tok, path, line))
        else:
            for s in re.split(r"[,\s;]+", req):
                if re.match(r"^[A-Za-z]", s) and (d := _req(s, path, line, warnings)):  # not a bare version
                    out.append(d)
    else:
        warnings.append((path, line, f"requirements has an unexpected type {type(req).__name__}; ignored"))


def parse_info_json(text: str, path: str) -> MetaScan:
    """MatBench info.json: ``requirements`` in any shape."""
    warnings: list[tuple[str, int | None, str]] = []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return MetaScan((), ((path, exc.lineno, f"not valid JSON ({exc.msg}); fix the file so its requirements "
                                                "can be read"),))
    if not isinstance(data, dict):
        return MetaScan((), ((path, 1, "not a JSON object; requirements not read"),))
    req = data.get("requirements")
    line = _line_of(text, "requirements")
    out: list[Declared] = []
    if req is None:
        return MetaScan((), ())
    _requirements(req, path, line, warnings, out)
    return MetaScan(tuple(d for d in out if not_a_package_reason(d.name) is None), tuple(warnings))


def parse_environment_yml(text: str, path: str) -> MetaScan:
    """A tolerant reader of conda environment files (no YAML library needed)."""
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    in_deps = False
    deps_indent = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if re.match(r"^dependencies\s*:", s) and indent == 0:
            in_deps, deps_indent = True, indent
            continue
        if in_deps and indent <= deps_indent and not s.startswith("-"):
            in_deps = False
        if not in_deps or not s.startswith("-"):
            continue
        item = s[1:].strip().strip("'\"")
        if item.endswith(":") or item.startswith("pip:"):
            continue  # the pip: sub-list header; its items follow as '- x'
        conda = indent <= deps_indent + 2 and "==" not in item and not re.search(r"[<>]", item)
        name = re.split(r"[=<>!~ ]", item, maxsplit=1)[0]
        name = name.split("::")[-1]
        if conda:
            if conda_system_reason(name) is not None:  # the [conda_system] table of module_map.toml
                continue
            mapped = conda_to_pypi(name.lower()) or conda_to_pypi(item.split("=")[0].strip()) or name
            if mapped != name:
                warnings.append((path, n, f"conda package {name} is {mapped} on PyPI"))
            out.append(Declared(canonicalize_name(mapped), item, path, n))
        elif (d := _req(item, path, n, warnings)):
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_requirements_txt(text: str, path: str) -> MetaScan:
    warnings: list[tuple[str, int | None, str]] = []
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.split(" #", 1)[0].strip()
        if not s or s.startswith("#"):
            continue
        if (d := _req(s, path, n, warnings)):
            out.append(_conda(d))
    return MetaScan(tuple(out), tuple(warnings))


def _dev_file(path: str) -> str | None:
    """The kind of a development-only requirements file (``requirements-dev.txt``,
    ``requirements/test.txt``, ``docs/requirements.txt``), or None."""
    stem = path.lower().rsplit(".", 1)[0]
    m = re.search(r"(?:^|[/_.-])(dev|develop|development|test|tests|testing|docs?|lint|style|ci)(?:$|[/_.-])", stem)
    return m.group(1) if m else None


def parse_any_requirements_txt(text: str, path: str) -> MetaScan:
    """A requirements file under another name (``requirements_gpu.txt``, ``requirements/base.txt``);
    development ones (dev, test, docs, lint, ci) are not what the model needs: not read, said so."""
    kind = _dev_file(path)
    if kind is not None:
        return MetaScan((), ((path, None, f"a {kind} requirements file: not read (not what the model needs to "
                                          "run); add any of its pins to model.toml if the model needs them"),))
    return parse_requirements_txt(text, path)


def _toml(text: str, path: str) -> tuple[dict | None, list[tuple[str, int | None, str]]]:
    import tomllib

    try:
        return tomllib.loads(text), []
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(at.group(1)) if at else None)
        return None, [(path, line, f"not valid TOML ({str(exc).splitlines()[0][:120]}); declared dependencies "
                                   "not read")]


def poetry_spec(spec: str) -> str | None:
    """A Poetry version constraint as PEP 440 (``^1.2.3`` -> ``>=1.2.3,<2.0.0``, ``~1.2`` ->
    ``>=1.2,<1.3``, ``*`` -> ``""``), or None when it cannot be read."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    out = []
    for part in (x.strip() for x in spec.split(",")):
        if part in ("", "*"):
            continue
        m = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)", part)
        if m:
            nums = [int(x) for x in m.group(2).split(".")]
            if m.group(1) == "^":
                i = next((k for k, n in enumerate(nums) if n != 0), len(nums) - 1)
            else:  # ~1.2.3 and ~1.2 bump the minor, ~1 the major
                i = 1 if len(nums) > 1 else 0
            upper = [*nums[:i], nums[i] + 1]
            out += [f">={m.group(2)}", "<" + ".".join(map(str, upper + [0] * (max(len(nums), 2) - len(upper))))]
            continue
        if re.fullmatch(r"\d+(?:\.\d+)*(?:\.\*)?", part):
            part = "==" + part
        try:
            SpecifierSet(part)
        except InvalidSpecifier:
            return None
        out.append(part)
    return ",".join(out)


def parse_pyproject(text: str, path: str) -> MetaScan:
    """``[project] dependencies`` (PEP 621), Poetry's ``[tool.poetry.dependencies]`` and PDM's or
    Poetry's dependency groups are not read (development)."""
    data, warnings = _toml(text, path)
    if data is None:
        return MetaScan((), tuple(warnings))
    out: list[Declared] = []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    deps = project.get("dependencies", [])
    line = _line_of(text, "dependencies")
    for item in deps if isinstance(deps, list) else []:
        if isinstance(item, str) and (d := _req(item, path, _line_of(text, item) or line, warnings)):
            out.append(d)
    poetry = ((data.get("tool") or {}).get("poetry") or {}) if isinstance(data.get("tool"), dict) else {}
    pdeps = poetry.get("dependencies", {}) if isinstance(poetry, dict) else {}
    for name, val in pdeps.items() if isinstance(pdeps, dict) else []:
        if str(name).lower() == "python":
            continue
        raw = val.get("version", "*") if isinstance(val, dict) else val
        where = _line_of(text, f"{name} =") or _line_of(text, str(name))
        if isinstance(val, dict) and "git" in val:
            ref = val.get("rev") or val.get("tag") or val.get("branch") or ""
            url = str(val["git"])
            d = _req(f"{name} @ {url if url.startswith('git+') else 'git+' + url}{'@' + str(ref) if ref else ''}",
                     path, where, warnings)
            if d is not None:
                warnings.append((path, where, f"{name} comes from {url[:60]}, not PyPI: it becomes an extra source "
                                              "of the model (a full commit id) or a review item"))
                out.append(d)
            continue
        if isinstance(val, dict) and ("path" in val or "url" in val):
            warnings.append((path, where, f"{name} comes from {str(val.get('path') or val.get('url'))[:60]}, not an "
                                          "index: not read (the submission's own code, or a review item)"))
            continue
        spec = poetry_spec(str(raw))
        if spec is None:
            warnings.append((path, where, f"cannot read Poetry constraint {name} = {str(raw)[:40]!r}; took the name"))
            spec = ""
        out.append(Declared(canonicalize_name(str(name)), f"{name}{spec}", path, where))
    return MetaScan(tuple(out), tuple(warnings))


def parse_pipfile(text: str, path: str) -> MetaScan:
    """Pipenv's ``[packages]`` (``[dev-packages]`` is development: not read)."""
    data, warnings = _toml(text, path)
    if data is None:
        return MetaScan((), tuple(warnings))
    out: list[Declared] = []
    pkgs = data.get("packages", {})
    for name, val in pkgs.items() if isinstance(pkgs, dict) else []:
        raw = val.get("version", "*") if isinstance(val, dict) else val
        where = _line_of(text, f"{name} =") or _line_of(text, str(name))
        spec = "" if str(raw).strip() in ("", "*") else str(raw).strip()
        d = _req(f"{name}{spec}", path, where, warnings)
        if d is not None:
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_setup_cfg(text: str, path: str) -> MetaScan:
    """``[options] install_requires`` of a setup.cfg (one requirement per line)."""
    import configparser

    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(text)
    except configparser.Error as exc:
        return MetaScan((), ((path, getattr(exc, "lineno", None), f"cannot read ({str(exc).splitlines()[0][:100]}); "
                                                                  "declared dependencies not read"),))
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    raw = cp.get("options", "install_requires", fallback="")
    for item in raw.replace(";\n", "\n").splitlines():
        item = item.split(" #", 1)[0].strip()
        if item and (d := _req(item, path, _line_of(text, item), warnings)):
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_setup_py(text: str, path: str) -> MetaScan:
    """``install_requires`` of a ``setup(...)`` call, read from the syntax tree (never run): a list
    of string literals, or a name bound to one at module level. Anything computed is said so."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return MetaScan((), ((path, getattr(exc, "lineno", None), "cannot parse setup.py; its install_requires "
                                                                  "were not read"),))
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"):
            continue
        for kw in node.keywords:
            if kw.arg != "install_requires":
                continue
            value = names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
            if not isinstance(value, (ast.List, ast.Tuple)) or not all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                warnings.append((path, kw.value.lineno, "install_requires is computed (read from a file or built "
                                                        "in code); not read: declare the requirements in model.toml"))
                continue
            for e in value.elts:
                assert isinstance(e, ast.Constant)
                if d := _req(str(e.value), path, e.lineno, warnings):
                    out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


PARSERS = {"metadata.json": parse_software_used, "info.json": parse_info_json,
           "environment.yml": parse_environment_yml, "environment.yaml": parse_environment_yml,
           "requirements.txt": parse_requirements_txt, "pyproject.toml": parse_pyproject,
           "pipfile": parse_pipfile, "setup.cfg": parse_setup_cfg, "setup.py": parse_setup_py}


def parser_for(path: str) -> Callable[[str, str], MetaScan] | None:
    """The reader of a declaration file by its name (relative posix path), or None: the names in
    PARSERS, any ``*requirement*.txt``, and YAML files named for a conda environment."""
    name = path.rsplit("/", 1)[-1].lower()
    if name == "requirements.txt":
        return parse_any_requirements_txt  # docs/requirements.txt is development
    if name in PARSERS:
        return PARSERS[name]
    if name.endswith(".txt") and ("requirement" in name or "/requirements/" in f"/{path.lower()}"):
        return parse_any_requirements_txt
    if name.endswith((".yml", ".yaml")) and re.search(r"env|conda", name):
        return parse_environment_yml
    return None


_PIP_OPTS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                        "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--trusted-host",
                        "--platform", "--python-version", "--implementation", "--abi", "--progress-bar",
                        "--cache-dir", "--log", "--proxy", "--retries", "--timeout", "--upgrade-strategy"}


def pip_install_requirements(argv: tuple[str, ...], path: str, line: int | None, cell: int | None = None,
                             ) -> tuple[list[Declared], list[tuple[str, int | None, str]]]:
    """Declarations of a ``pip install ...`` command line (argv starting at ``pip``): each
    requirement with its version, located; options skipped; ``-r FILE`` noted."""
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    if len(argv) < 2 or argv[1] != "install":
        return out, warnings
    args = list(argv[2:])
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-r", "--requirement"):
            if i + 1 < len(args):
                warnings.append((path, line, f"pip install -r {args[i + 1]}: scan that requirements file too"))
            i += 2
            continue
        if a in _PIP_OPTS_WITH_VALUE:
            i += 2
            continue
        if a.startswith("-") and a not in ("-e", "--editable"):
            i += 1
            continue
        if a in ("-e", "--editable"):
            i += 1
            if i < len(args):
                d = _req(f"-e {args[i]}", path, line, warnings)
                if d:
                    out.append(Declared(d.name, d.spec, path, line, cell))
            i += 1
            continue
        # a folder ("allegro/", cloned a line before: nequip_mlearn) or an archive is not a PyPI name
        if a in (".", "..") or a.startswith(("./", "../", "/", "~")) or a.endswith((".whl", ".tar.gz", ".zip")) \
                or ("/" in a and "://" not in a and "@" not in a):
            warnings.append((path, line, f"pip install {a}: a local path or file, not a declaration (code cloned "
                                         "or shipped with the submission: pin it as an extra source)"))
            i += 1
            continue
        d = _req(a, path, line, warnings)
        if d:
            out.append(_alias(Declared(d.name, d.spec, path, line, cell)))
        i += 1
    return out, warnings


def pip_install_line(command: str, path: str, line: int | None, cell: int | None = None,
                     ) -> tuple[list[Declared], list[tuple[str, int | None, str]]]:
    """Declarations of a shell command text containing ``pip install`` (``!pip install x``,
    ``python -m pip install x``); nothing for other commands."""
    if "install" not in command or "pip" not in command:
        return [], []
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for k, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        if re.fullmatch(r"pip[\d.]*", base) and words[k + 1:k + 2] == ["install"]:
            end = next((j for j in range(k, len(words)) if words[j] in ("&&", ";", "||", "|")), len(words))
            return pip_install_requirements(("pip", *words[k + 1:end]), path, line, cell)
    return [], []
