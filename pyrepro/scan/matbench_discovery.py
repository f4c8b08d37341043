"""MatBench Discovery's model file (``models/<family>/<model_key>.yml`` in janosh/matbench-discovery),
the schema of 2026 (``tests/model-schema.yml`` there; earlier files are read by
``metadata.parse_metadata_yml``: a top-level ``requirements: {name: version}``)::

    dates:
      benchmark_added: '2023-07-14'      # date evidence (evidence.stated_date)
      paper_published: '2022-05-13'      # weaker: the paper's day
    environment:
      dependencies:                      # PEP 508 strings, given to `uv run --with`
      - mace-torch>=0.3.16
      - alphanet @ git+https://github.com/zmyybc/AlphaNet
      python_version: '3.11'             # `uv run --python`: a statement of the Python
      find_links: ['https://data.pyg.org/whl/torch-2.5.1+cu121.html']
      extra_index_urls: []
      project: models/equflash/kappa-env # a uv project that owns resolution (the pins are display-only)

What pyrepro takes from it: each dependency as a declared requirement located at its own line
(``metadata._req``: a ``name @ git+...`` one is a VCS declaration), ``python_version`` as a Python
pin (``python_statement``), ``find_links`` and ``extra_index_urls`` as package sources it refuses
with their line (``metadata.PackageSource``), and ``project`` as a warning: its ``pyproject.toml``
is read like any other when it is inside the scanned folder. The YAML is read by the tolerant
``metadata.yaml_top`` (no YAML library; nothing raises).
"""

from __future__ import annotations

import re

from pyrepro.scan import metadata as meta

ENVIRONMENT = "environment"
SOURCE_KEYS = ("find_links", "extra_index_urls")


def _environment(text: str) -> dict[object, object] | None:
    env = meta.yaml_top(text, {ENVIRONMENT}).get(ENVIRONMENT)
    return env if isinstance(env, dict) else None


def _get(env: dict[object, object], key: str) -> tuple[object, int | None]:
    """The value of ``key`` in the environment block and the line of its key."""
    for k, v in env.items():
        if str(k) == key:
            return v, meta._at(k, None)
    return None, None


def is_model_file(text: str) -> bool:
    """A YAML text with a top-level ``environment:`` block holding ``dependencies`` or
    ``python_version``: MatBench Discovery's model file."""
    if not re.search(rf"^{ENVIRONMENT}\s*:", text, re.M):
        return False
    env = _environment(text)
    return env is not None and any(str(k) in ("dependencies", "python_version") for k in env)


def parse_model_yml(text: str, path: str) -> meta.MetaScan:
    """The declarations of a model file's ``environment`` block (and of a top-level
    ``requirements`` beside it, as ``metadata.parse_metadata_yml`` reads it)."""
    env = _environment(text) or {}
    warnings: meta.Warnings = []
    out: list[meta.Declared] = []
    deps, line = _get(env, "dependencies")
    if isinstance(deps, list):
        for item in deps:
            if isinstance(item, str):
                if (d := meta._req(item, path, meta._at(item, line), warnings)) is not None:
                    out.append(d)
            else:
                warnings.append((path, line, f"environment.dependencies item {str(item)[:60]!r} is not a "
                                             "requirement string; not read"))
    elif deps is not None:
        warnings.append((path, line, "environment.dependencies is not a list of requirements; not read"))
    sources: list[meta.PackageSource] = []
    for key in SOURCE_KEYS:
        value, kline = _get(env, key)
        for url in value if isinstance(value, list) else [value] if isinstance(value, str) else []:
            if isinstance(url, str) and url.strip():
                sources.append(meta.PackageSource(key, url.strip(), path, meta._at(url, kline)))
    warnings.extend((s.path, s.line, s.message()) for s in sources)
    project, pline = _get(env, "project")
    if isinstance(project, str) and project.strip():
        warnings.append((path, pline, f"environment.project {project.strip()[:80]}: a uv project owns this model's "
                                      "resolution (its dependencies above are display pins, read all the same); its "
                                      "pyproject.toml is read when it is inside the scanned folder, else add its pins "
                                      "to model.toml after review"))
    rest = meta.parse_metadata_yml(text, path)  # a top-level requirements: of the earlier schema
    return meta.MetaScan((*out, *rest.declared), (*warnings, *rest.warnings), sources=tuple(sources))


def python_statement(text: str) -> tuple[str, int | None] | None:
    """(``environment.python_version`` as written, its line), or None. The earlier schema's
    ``requirements: {python: '3.12.11'}`` counts too when it is a bare version (the scan's warning
    says so: ``metadata._python_entry``); a range there (``'>=3.9'``) is not read."""
    env = _environment(text)
    if env is not None:
        value, line = _get(env, "python_version")
        if isinstance(value, str) and value.strip():
            return value.strip(), meta._at(value, line)
    req = meta.yaml_top(text, {"requirements"}).get("requirements")
    if isinstance(req, dict):
        for k, v in req.items():
            if str(k).strip().lower() in meta.PYTHON_NAMES | {"python_version"} and isinstance(v, str) and \
                    re.fullmatch(r"\s*v?[23]\.\d{1,2}(?:\.\d+)?\s*", v):
                return v.strip(), meta._at(v, meta._at(k, None))
    return None
