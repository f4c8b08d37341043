"""``pyrepro ci github``: GitHub Actions workflows for a benchmark platform's repository.

Two workflows, rendered from templates shipped with pyrepro (``templates/github-*.yml.j2``; data
goes into a fixed skeleton, the logic stays in the templates):

- ``pyrepro-gate.yml``, the submission gate: on a pull request that adds or changes a folder under
  the contributions folder, each changed folder is reproduced (``pyrepro reproduce DIR --test
  --json``) on CPU, without secrets, within ``timeout`` minutes; ``pyrepro ci verdict`` writes the
  verdict to the job summary and fails the check naming the stage and the next step; the record is
  uploaded as an artifact.
- ``pyrepro-catalogue.yml``, the back-catalogue: on a schedule, every contribution folder, as a
  matrix of at most ``max_jobs`` jobs (GitHub runs at most 256 jobs of one matrix), each running
  ``pyrepro batch --chunk I/N`` over its share; a last job merges the chunks into one report.

Folder names come from pull requests: the workflows pass them to commands only through
environment variables, never into the script text (no script injection).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pyrepro.errors import PyreproError, UsageError
from pyrepro.fsutil import atomic_write_text

GATE = "pyrepro-gate.yml"
CATALOGUE = "pyrepro-catalogue.yml"
#: GitHub's limit on the jobs one matrix makes in one workflow run
MATRIX_LIMIT = 256
#: GitHub-hosted runners' CPythons a submission may ask for (setup-python on ubuntu-latest); the
#: last one runs pyrepro
PYTHONS = ("3.8", "3.9", "3.10", "3.12", "3.13", "3.11")


class GateFailed(PyreproError):
    """A reproduction the gate ran did not pass (``pyrepro ci verdict``): names the stage and the fix."""


@dataclass(frozen=True)
class Settings:
    """What the workflows are made for."""

    contributions: str = "contributions"  # the folder of contribution folders, relative to the repository root
    install: str = ""  # the pip requirement that installs pyrepro on the runner (default: ``default_install``)
    timeout: int = 15  # minutes for one gate job (install and reproduction)
    budget: int = 11  # minutes for the reproduction itself (``--budget``), inside ``timeout``
    cron: str = "23 3 * * 0"  # the back-catalogue's schedule (Sundays, 03:23 UTC)
    max_jobs: int = MATRIX_LIMIT
    jobs: int = 2  # submissions at once on one runner (``pyrepro batch --jobs``)
    max_parallel: int = 20  # back-catalogue jobs at once
    pythons: tuple[str, ...] = PYTHONS

    def check(self) -> Settings:
        c = PurePosixPath(self.contributions)
        if c.is_absolute() or ".." in c.parts or not self.contributions.strip() or str(c) == ".":
            raise UsageError(f"--contributions {self.contributions!r}: give the folder of contribution folders "
                             "relative to the repository's root, e.g. 'contributions'")
        if not 1 <= self.max_jobs <= MATRIX_LIMIT:
            raise UsageError(f"--max-jobs {self.max_jobs}: GitHub runs 1 to {MATRIX_LIMIT} jobs of one matrix")
        if not 0 < self.budget < self.timeout:
            raise UsageError(f"--budget {self.budget} must be below --timeout {self.timeout} (minutes): the install "
                             "takes a few minutes of the job too")
        if len(self.cron.split()) != 5:
            raise UsageError(f"--cron {self.cron!r}: five fields, e.g. '23 3 * * 0'")
        return self


def default_install() -> str:
    """How a runner installs this pyrepro: from the VCS URL and commit it was installed from, when
    pip recorded one (``direct_url.json``); else ``pyrepro==<version>`` from the index."""
    from importlib import metadata

    from pyrepro import __version__

    try:
        raw = metadata.distribution("pyrepro").read_text("direct_url.json")
        d = json.loads(raw) if raw else {}
    except (metadata.PackageNotFoundError, ValueError):
        d = {}
    vcs = d.get("vcs_info") if isinstance(d, dict) else None
    if isinstance(vcs, dict) and d.get("url") and vcs.get("commit_id"):
        return f"pyrepro @ {vcs.get('vcs', 'git')}+{d['url']}@{vcs['commit_id']}"
    return f"pyrepro=={__version__}"


def _yaml_str(s: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(s)


def render(template: str, settings: Settings) -> str:
    """One workflow's text."""
    import jinja2

    from pyrepro import __version__

    s = settings.check()
    env = jinja2.Environment(loader=jinja2.PackageLoader("pyrepro", "templates"), undefined=jinja2.StrictUndefined,
                             variable_start_string="[=", variable_end_string="=]",
                             block_start_string="[%", block_end_string="%]", keep_trailing_newline=True,
                             autoescape=False)
    contributions = str(PurePosixPath(s.contributions))
    install = s.install or default_install()
    return env.get_template(template).render(
        version=__version__, contributions=contributions, contributions_q=_yaml_str(contributions),
        paths_glob=_yaml_str(f"{contributions}/**"), install_q=_yaml_str(install), timeout=s.timeout,
        budget=s.budget, cron=s.cron, max_jobs=s.max_jobs, jobs=s.jobs, max_parallel=s.max_parallel,
        pythons=list(s.pythons))


def render_gate(settings: Settings) -> str:
    return render("github-gate.yml.j2", settings)


def render_catalogue(settings: Settings) -> str:
    return render("github-catalogue.yml.j2", settings)


def write_workflows(settings: Settings, out_dir: Path) -> list[Path]:
    """Write both workflows into ``out_dir`` (a repository's ``.github/workflows``)."""
    out = []
    for name, text in ((GATE, render_gate(settings)), (CATALOGUE, render_catalogue(settings))):
        path = Path(out_dir) / name
        atomic_write_text(path, text)
        out.append(path)
    return out


# ------------------------------------------------------------------------------------ the verdict

@dataclass(frozen=True)
class Verdict:
    """What the gate says about one reproduction record."""

    folder: str
    ok: bool
    stage: str | None
    reason: str
    next_step: str
    exit_code: int
    markdown: str

    def annotation(self) -> str:
        """A GitHub workflow command: an error annotation on the check, naming the stage and the fix."""
        if self.ok:
            return f"::notice title={_prop(f'pyrepro: {self.folder} reproduced')}::{_msg(self.reason)}"
        title = f"pyrepro: {self.folder} stopped at {self.stage or 'the start'}"
        text = self.reason + (f" Next step: {self.next_step}" if self.next_step else "")
        return f"::error title={_prop(title)}::{_msg(text)}"

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "ok": self.ok, "stage": self.stage, "reason": self.reason,
                "next_step": self.next_step, "exit_code": self.exit_code}


def _msg(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _msg(s).replace(":", "%3A").replace(",", "%2C")


def _md(s: Any) -> str:
    return " ".join(str(s or "").split()).replace("|", "\\|")


def verdict(envelope: Mapping[str, Any], folder: str = "") -> Verdict:
    """The gate's verdict on ``pyrepro reproduce --json``'s output (the envelope of docs/json.md)."""
    rec = envelope.get("result") if isinstance(envelope.get("result"), dict) else None
    err = envelope.get("error") if isinstance(envelope.get("error"), dict) else None
    folder = folder or (str(rec.get("folder")) if rec else "")
    if rec is None:
        reason = str(err.get("message")) if err else "no reproduction record"
        nxt = str(err.get("hint") or "") if err else "read the step's log"
        code = int(err.get("code", 1)) if err else 1
        md = (f"### pyrepro: `{_md(folder)}` could not be reproduced\n\n{_md(reason)}\n\n"
              + (f"**Next step:** {_md(nxt)}\n" if nxt else ""))
        return Verdict(folder, False, None, reason, nxt, code, md)
    ok = bool(envelope.get("ok")) and bool(rec.get("ok"))
    stages = [s for s in rec.get("stages", []) if isinstance(s, dict)]
    failed = next((s for s in stages if s.get("status") == "failed"), None)
    from pyrepro.batch import stage_reached

    stage = stage_reached(rec)
    reason = str(failed.get("detail")) if failed else ""
    nxt = str((failed.get("next_step") if failed else None) or rec.get("next_step") or "")
    if ok:
        done = [s["stage"] for s in stages if s.get("status") == "ok"]
        skipped_run = next((s for s in stages if s.get("stage") == "run" and s.get("status") == "skipped"), None)
        reason = f"{', '.join(done)} ok" + (f"; run skipped: {skipped_run.get('detail')}" if skipped_run else "")
    head = (f"### pyrepro: `{_md(folder)}` reproduced ✓" if ok else
            f"### pyrepro: `{_md(folder)}` stopped at **{stage}** ✗")
    rows = ["| stage | status | seconds | detail |", "| --- | --- | --- | --- |"]
    for s in stages:
        detail = _md(s.get("detail"))
        rows.append(f"| {s.get('stage')} | {s.get('status')} | {s.get('seconds', '')} | "
                    f"{detail[:300] + ('…' if len(detail) > 300 else '')} |")
    py = rec.get("python") or {}
    lines = [head, ""]
    if not ok:
        lines += [f"**Why:** {_md(reason)[:1200]}", "", f"**Next step:** {_md(nxt) or 'see the record'}", ""]
    lines += [*rows, ""]
    if isinstance(py, dict) and py.get("version"):
        lines += [f"Python {py['version']}: {_md(py.get('reason'))}", ""]
    if rec.get("category") is not None:
        from pyrepro.lockrecord import CATEGORIES

        lines += [f"Lock category {rec['category']}: {CATEGORIES.get(int(rec['category']), '')}.", ""]
    lines += ["What this shows: an environment built from a lock and the code's imports importing in it (and a "
              "test run where a reviewed patch series gives one); not that the model's results reproduce. The "
              "record is this job's artifact.", ""]
    code = int(rec.get("exit_code") or (0 if ok else 1))
    return Verdict(folder, ok, stage, reason, nxt, code, "\n".join(lines))


def read_envelope(path: Path) -> dict[str, Any]:
    """``pyrepro reproduce --json``'s output file: one envelope (docs/json.md)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"ok": False, "result": None, "error": {"code": 1, "message": f"no record: {path} was not written",
                                                       "hint": "read the reproduce step's log"}}
    try:
        d = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
    except ValueError:
        d = None
    if not isinstance(d, dict):
        return {"ok": False, "result": None, "error": {"code": 1, "message": f"{path} holds no JSON envelope",
                                                       "hint": "read the reproduce step's log"}}
    return d


def folder_list(text: str) -> list[str]:
    """The folders a gate job reproduces, from its ``folders=`` output line (for tests and tools)."""
    m = re.search(r"^folders=(.*)$", text, re.M)
    return list(json.loads(m.group(1))) if m else []


__all__: Sequence[str] = ("CATALOGUE", "GATE", "GateFailed", "Settings", "Verdict", "default_install",
                          "read_envelope", "render_catalogue", "render_gate", "verdict", "write_workflows")
