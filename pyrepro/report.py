"""``pyrepro report``: docs/STATUS.md and its JSON twin from the registry and the records.

Sources, per model: ``models/<name>/model.toml`` and ``lock.toml`` (lock category, drift),
``patches/<name>/`` (patches and categories), and ``models/<name>/last-run.json``: the committed
summary of the latest run per benchmark and of the latest import check. ``refresh_summaries``
(run by ``pyrepro report`` unless ``--no-refresh``) updates that summary from this machine's
cache (``<cache>/runs/<name>/latest.json``, ``<cache>/imports/<name>.json``); it keeps the
provenance essentials only, with no machine paths, so the file can be committed and the report
regenerated anywhere. What was not seen is said to be not seen, and what cannot run here (Nix
builds, GPU runs) is marked unverified.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from pyrepro import patches
from pyrepro.fsutil import atomic_write_text, file_sha256
from pyrepro.paths import Paths
from pyrepro.registry import Registry

NIX_NOTE = ("build unverified: nixpkgs cannot be fetched on the machines this was made on, so `nix build "
            ".#models.<name>` was never run")
NIX_EVAL = "docs/nixeval.json"  # written by `python -m tests.nixeval.harness run --record docs/nixeval.json`


def nix_status(root: Path, name: str, lock_sha256: str | None) -> str:
    """What is known of a model's Nix package: the offline evaluation record (docs/nixeval.json)
    when it covers this lock, and always that it was not built."""
    ev = _read_json(root / NIX_EVAL)
    m = (ev or {}).get("models", {}).get(name)
    if not ev or not m:
        return f"not evaluated against the real dream2nix (no {NIX_EVAL} entry); {NIX_NOTE}"
    systems = m.get("systems", {})
    ok = sorted(s for s, v in systems.items() if v.get("ok"))
    bad = sorted(f"{s} ({v.get('error', '?')})" for s, v in systems.items() if not v.get("ok"))
    against = ev.get("against", {})
    head = (f"evaluated {ev.get('evaluated', '?')} against the real dream2nix "
            f"{str(against.get('dream2nix', '?'))[:8]} and pyproject.nix {str(against.get('pyproject-nix', '?'))[:8]} "
            "with a stand-in nixpkgs")
    parts = [head]
    if ok:
        n = max(v.get("locked_packages", 0) for s, v in systems.items() if v.get("ok"))
        parts.append(f"instantiates on {', '.join(ok)} ({n} locked packages, pyEnv, package, app, checks)")
    if bad:
        parts.append(f"FAILS on {'; '.join(bad)}")
    if lock_sha256 and m.get("lock_sha256") != lock_sha256:
        parts.append("STALE: pdm.lock changed since; re-run the harness")
    return "; ".join(parts) + f"; {NIX_NOTE}"


def _machine(run: dict[str, Any]) -> str:
    """Where and when a recorded run ran (the report shows rows measured elsewhere, never as its own)."""
    env = run.get("environment") or {}
    where = ", ".join(str(x) for x in (env.get("platform"), env.get("cpu"),
                                       f"{env['cpus']} cores" if env.get("cpus") else None) if x) or "machine not recorded"
    started = str(run.get("started") or "")
    when = f"{started[0:4]}-{started[4:6]}-{started[6:8]} {started[9:11]}:{started[11:13]} UTC" if len(started) >= 13 \
        else "time not recorded"
    return f"{where}; {when}"


def _outcome(r: dict[str, Any]) -> str:
    """A run's exit, time and verdict, saying what is unknown instead of printing None."""
    code, secs = r.get("exit_code"), r.get("seconds")
    tier = (r.get("verdict") or {}).get("tier")
    if code is None:
        head = "did not start (no exit code)"
    else:
        head = f"exit {code}" + (f" in {secs} s" if secs is not None else "")
    return head + (f"; verdict {tier}" if tier else "; no verdict")


def _file_sha256(p: Path) -> str | None:
    try:
        return str(file_sha256(p).hexdigest())
    except OSError:
        return None


def _read_json(p: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(p.read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


SUMMARY = "last-run.json"
_RUN_KEYS = ("benchmark", "test", "started", "seconds", "exit_code", "error", "stage", "source", "lock", "patches",
             "environment", "gpu", "data", "source_protection", "sandbox", "seeds", "outputs", "verdict")


_TMP_PATH = re.compile(r"/tmp/[^\s'\"]+")


def _scrub(x: Any, replacements: list[tuple[str, str]]) -> Any:
    """``x`` with machine paths replaced by placeholders (strings, recursively)."""
    if isinstance(x, str):
        for old, new in replacements:
            if old:
                x = x.replace(old, new)
        return _TMP_PATH.sub("<tmp>", x)
    if isinstance(x, dict):
        return {k: _scrub(v, replacements) for k, v in x.items()}
    if isinstance(x, list):
        return [_scrub(v, replacements) for v in x]
    return x


def _replacements(paths: Paths) -> list[tuple[str, str]]:
    pairs = [(str(paths.cache), "$PYREPRO_CACHE"), (str(paths.root), "$PROJECT"), (str(Path.home()), "~")]
    return sorted(pairs, key=lambda p: -len(p[0]))


def run_summary(record: dict[str, Any], paths: Paths) -> dict[str, Any]:
    """The committed essentials of a run record: no command line, no logs, no machine paths."""
    out = {k: record.get(k) for k in _RUN_KEYS}
    env = dict(out.get("environment") or {})
    env.pop("env_dir", None)
    out["environment"] = env
    err = out.get("error")
    if isinstance(err, str) and len(err) > 1200:  # the head says what failed, the tail says why
        out["error"] = err[:300] + "\n…\n" + err[-900:]
    return dict(_scrub(out, _replacements(paths)))


def imports_summary(rec: dict[str, Any], paths: Paths) -> dict[str, Any]:
    results = rec.get("results", [])
    return dict(_scrub({"env_key": rec.get("env_key"), "results": [[r[0], r[1], str(r[2])[:300]] for r in results]},
                       _replacements(paths)))


def run_key(rec: dict[str, Any]) -> str:
    """Summaries keep one run per benchmark and data kind: ``<benchmark>/<fixture|jarvis>``."""
    return f"{rec.get('benchmark')}/{(rec.get('data') or {}).get('kind') or 'unknown'}"


def latest_runs(runs_dir: Path) -> dict[str, dict[str, Any]]:
    """The newest run record per benchmark and data kind in ``<cache>/runs/<name>/``."""
    best: dict[str, dict[str, Any]] = {}
    recs = [_read_json(p) for p in sorted(runs_dir.glob("*/record.json"))]
    recs.append(_read_json(runs_dir / "latest.json"))
    for rec in recs:
        if not rec or not rec.get("benchmark"):
            continue
        b = run_key(rec)
        if b not in best or str(rec.get("started", "")) >= str(best[b].get("started", "")):
            best[b] = rec
    return best


def refresh_summaries(registry: Registry, paths: Paths) -> list[Path]:
    """Update ``models/<name>/last-run.json`` from this machine's cache; returns the files changed."""
    changed = []
    for spec in registry:
        target = spec.dir / SUMMARY
        old = _read_json(target) or {}
        new: dict[str, Any] = {"schema": 1, "model": spec.name, "runs": dict(old.get("runs") or {}),
                               "imports": old.get("imports")}
        for bench, run in latest_runs(paths.cache / "runs" / spec.name).items():
            new["runs"][bench] = run_summary(run, paths)
        imp = _read_json(paths.cache / "imports" / f"{spec.name}.json")
        if imp and "results" in imp:
            new["imports"] = imports_summary(imp, paths)
        if not new["runs"] and not new["imports"]:
            continue
        new["runs"] = dict(sorted(new["runs"].items()))
        text = json.dumps(new, indent=2, sort_keys=False) + "\n"
        if not target.is_file() or target.read_text() != text:
            atomic_write_text(target, text)
            changed.append(target)
    return changed


def _default_run(spec: Any, summary: dict[str, Any]) -> dict[str, Any] | None:
    runs = summary.get("runs") or {}
    for b in spec.benchmarks:
        for kind in ("fixture", "jarvis"):
            if f"{b}/{kind}" in runs:
                return dict(runs[f"{b}/{kind}"])
    return None


def model_status(spec: Any, paths: Paths) -> dict[str, Any]:
    lock_toml = spec.dir / "lock.toml"
    lock: dict[str, Any] = {"category": None, "label": "not locked"}
    if lock_toml.is_file():
        from pyrepro.lock import read_record

        rec = read_record(spec.dir) or {}  # a broken record is a located InputError (file and line)
        from pyrepro.lockrecord import confirmed_category

        confirmed, confirmed_label = confirmed_category(rec)
        lock = {"category": rec.get("category"), "label": rec.get("category_label"), "strategy": rec.get("strategy"),
                "confirmed_category": confirmed, "confirmed_label": confirmed_label, "built": rec.get("built"),
                "packages": rec.get("packages"), "seconds": rec.get("seconds"), "drift": rec.get("drift", []),
                "fidelity": rec.get("fidelity", []), "locked": (spec.dir / "pdm.lock").is_file()}
    try:
        series = patches.load_series(paths.patch_dir(spec.name))
        pts = [{"file": p.path.name, "category": p.category, "subject": p.subject} for p in series]
    except Exception as exc:  # a broken series is reported, not hidden
        pts = [{"file": "?", "category": "error", "subject": str(exc)}]
    summary = _read_json(spec.dir / SUMMARY) or {}
    run = _default_run(spec, summary)
    imports = summary.get("imports")
    others = {b: {"exit_code": r.get("exit_code"), "seconds": r.get("seconds"), "data": (r.get("data") or {}).get("kind"),
                  "verdict": r.get("verdict"), "error": r.get("error")}
              for b, r in (summary.get("runs") or {}).items() if not run or b != run_key(run)}
    return {
        "name": spec.name, "upstream": spec.upstream_name, "python": spec.python, "gpu": spec.gpu,
        "benchmarks": list(spec.benchmarks),
        "scanned": list(spec.dependencies.scanned),
        "lock": lock,
        "patches": pts,
        "build": ({"backend": run["environment"]["backend"], "env_key": run["environment"].get("env_key"),
                   "python": run["environment"].get("python")}
                  if run and (run.get("environment") or {}).get("backend") else None),
        "imports": imports,
        "run": ({k: run.get(k) for k in ("benchmark", "test", "started", "seconds", "exit_code", "error", "stage")}
                | {"data": run.get("data", {}).get("kind"), "verdict": run.get("verdict"),
                   "machine": _machine(run)} if run else None),
        "other_runs": others,
        "nix": nix_status(paths.root, spec.name, _file_sha256(spec.dir / "pdm.lock")),
        "gpu_runs": "unverified: no accelerator on the machines this was made on",
        "notes": spec.notes,
        "extra_sources": [{"name": e.name, "repository": e.repository, "commit": e.commit, "install": e.install,
                           "hash": e.hash} for e in spec.extra_sources],
    }


def build_report(registry: Registry, paths: Paths) -> dict[str, Any]:
    return {"generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "models": [model_status(s, paths) for s in registry]}


_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Exit))\b.*:")


def short_error(text: str) -> str:
    """One line for a table: the error's first line and, when different, the line that says why
    (the last Python exception line, else the last 'error' line)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if not lines:
        return ""
    first = lines[0]
    why = next((ln for ln in reversed(lines[1:]) if _EXC_LINE.match(ln)), None) or \
        next((ln for ln in reversed(lines[1:]) if "error" in ln.lower()), None)
    out = first[:160] + ("…" if len(first) > 160 else "")
    if why and why != first:
        out += " … " + why[:160]
    return out


def _cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


STATUS_COLUMNS = ("model", "lock (category)", "patches", "build (local)", "imports", "test run (fixture)",
                  "verdict")


def status_cells(m: dict[str, Any]) -> list[str]:
    """One model's row of the status table, in ``STATUS_COLUMNS`` order, as plain text (the
    Markdown of docs/STATUS.md and the HTML page both show these cells)."""
    lk = m["lock"]
    if not lk.get("category"):
        lock = "not locked"
    else:  # a resolved lock counts once an environment was built from it (lock.confirmed_category)
        lock = f"{lk.get('confirmed_category') or lk['category']}: {lk.get('confirmed_label') or lk['label']}"
    pcats = sorted({p["category"] for p in m["patches"]})
    patches_s = f"{len(m['patches'])} ({', '.join(pcats)})" if m["patches"] else "none yet"
    if m["build"]:
        build = f"ok, Python {m['build']['python']}"
    elif m["run"] and m["run"].get("stage") == "build":
        build = "failed (see verdict)"
    else:
        build = "not built"
    imp = m["imports"]
    if imp:
        bad = [r for r in imp.get("results", []) if r[1] != "ok"]
        imports = f"{len(imp.get('results', [])) - len(bad)}/{len(imp.get('results', []))} ok"
    else:
        imports = "not checked"
    run = m["run"]
    if run:
        runs = (f"exit {run['exit_code']} in {run['seconds']} s" if run.get("exit_code") is not None
                else f"not run: {short_error(run.get('error') or '')}")
        v = run.get("verdict") or {}
        verdict_s = f"{v.get('tier')}: {short_error(v.get('reason') or '')}"
    else:
        runs, verdict_s = "not run", "-"
    return [m["name"], lock, patches_s, build, imports, runs, verdict_s]


# The first line of docs/STATUS.md: the file is only ever generated (a hand edit would be reverted by
# the next `pyrepro report` without a word; `pyrepro report --check` finds one)
GENERATED_HEADER = ("<!-- Generated by `pyrepro report` (pyrepro/report.py): do not edit by hand. "
                    "`pyrepro report --check` fails when this file differs from what the generator writes. -->")
# the line that carries the time of generation: the one part of the file a check does not compare
_STAMP = re.compile(r"^(Generated by `pyrepro report` on )\d{4}-\d\d-\d\d \d\d:\d\d UTC( .*)$")


def render_markdown(rep: dict[str, Any]) -> str:
    out = [
        GENERATED_HEADER,
        "# Status",
        "",
        f"Generated by `pyrepro report` on {rep['generated']} from the registry, the lock records and the",
        "committed run summaries (`models/<name>/last-run.json`). Fixture-data runs prove executability,",
        "never a numerical result.",
        "",
        "| " + " | ".join(STATUS_COLUMNS) + " |",
        "|" + " --- |" * len(STATUS_COLUMNS),
    ]
    for m in rep["models"]:
        out.append("| " + " | ".join(_cell(c) for c in status_cells(m)) + " |")
    runs = [m for m in rep["models"] if m.get("run")]
    executable = [m for m in runs if ((m["run"] or {}).get("verdict") or {}).get("tier") == "executable"]
    out += ["", "## What this does and does not show", "",
            f"- {len(executable)} of {len(rep['models'])} models ran their patched entry in test mode on pyrepro's fixture "
            "data through the local backend (CPU, hash-checked environment from the committed pdm.lock) and wrote "
            "well-formed predictions for every test id: that is executability, not reproduction.",
            "- Nix: the flake is EVALUATED offline against the real dream2nix and pyproject.nix (flake.lock revisions) "
            "and the real nixpkgs lib with a builtins-only stand-in package set whose output paths depend on their "
            "inputs (tests/nixeval, docs/nix.md; per model below, from docs/nixeval.json). That proves every output "
            "instantiates on the systems its lock was made for: module options merge, every locked package gets a "
            "source and an output path, no dependency cycle, the apps, checks and dev shell. It does not prove that "
            "anything builds or runs: wheels unpacking, autoPatchelf finding every library, sdists compiling and "
            "the checks passing need a real `nix build`, which was never run (no nixpkgs there).",
            "- Not verified on the machines this was made on: any real `nix build .#models.<name>`, GPU runs (no "
            "accelerator), and runs on the real JARVIS datasets (`--data jarvis`, figshare unreachable), so no verdict "
            "compares predictions with the authors' submitted ones yet.",
            "- Scanned distributions below are the required ones (docs/scan.md: optional and platform-guarded imports "
            "and guesses are kept apart and never written as dependencies); the scanner's speed against FawltyDeps "
            "is measured by `bench/scan.py` (README).",
            "- New, uncurated submissions: `pyrepro reproduce DIR` takes a folder through init, lock, build and the "
            "import check with no human step; what that reached on a corpus of third-party leaderboard submissions "
            "is in docs/reproduce.md. It verifies that the environment builds and the code's imports import, not "
            "that the model runs: a test-mode run still needs a reviewed patch series. Python 2 submissions are "
            "locked by pip on CPython 2.7 (a bounded attempt through a date-bounded view of the index, x86_64 only; docs/lock.md) and built with virtualenv; a "
            "lock pdm refuses for a set uv resolved is made from uv's resolution, said in its record. Neither has a "
            "Nix expression that was evaluated. A git dependency pinned to a commit that cannot be fetched is "
            "replaced by the index's release of that name (rule source-to-index, said in model.toml's notes). A "
            "folder that is itself a package is recognised by the scan only: a run does not yet put it on "
            "sys.path under its repository's name (unverified for runs).",
            "- The `--json` output of every command is one envelope (docs/json.md); unexpected errors exit 70 with a "
            "saved traceback.",
            "- Each run and import check verifies what it executes before it starts (pyrepro/verify.py): every "
            "file of the staged source and of the environment (compiled libraries, .pth, .pyc and RECORD "
            "included) against the manifest written when it was made and kept outside it; the record lists what "
            "was verified and how long it took. Runs recorded before this check do not have it.",
            "- Foreign code (a submission's scripts, sdist builds) runs in a bubblewrap sandbox on the local "
            "backend: read-only environment and source, no network for runs, no home, checkout or other "
            "environment (docs/backend.md); a run with --no-sandbox says so in its record. The Nix backend's "
            "sandbox is Nix's own and is unverified here.",
            "- The local backend installs a lock's wheels with uv since 2026-12-05 (on 3.6 and 3.7 too since "
            "2026-12-06; pip for Python 2, for sdists and when uv fails; docs/backend.md); each environment's "
            "`.pyrepro-complete` says which. "
            "A model's test run below was made with the installer of its date.",
            "", "## Per model", ""]
    for m in rep["models"]:
        out.append(f"### {m['name']} (upstream `{m['upstream']}`)")
        out.append("")
        out.append(f"- Scanned distributions: {', '.join(m['scanned']) or 'none'}.")
        lk = m["lock"]
        if lk.get("category"):
            out.append(f"- Lock: category {lk['category']} ({lk['label']}), {lk.get('packages')} packages, "
                       f"strategy {lk.get('strategy')}, {lk.get('seconds')} s. "
                       + (f"Confirmed: an environment was built from it (Python {lk['built'].get('python')}, "
                          f"{lk['built'].get('at')})." if isinstance(lk.get("built"), dict) and lk["built"].get("ok")
                          else f"Counts as: {lk.get('confirmed_label')}."))
            for d in lk.get("drift", []):
                out.append(f"  - drift: {d}")
            for f in lk.get("fidelity", []):
                out.append(f"  - fidelity: {f}")
        else:
            out.append("- Lock: not locked yet.")
        if m["patches"]:
            out.append("- Patches: " + "; ".join(f"`{p['file']}` ({p['category']})" for p in m["patches"]) + ".")
        else:
            out.append("- Patches: none yet; the entry does not have the uniform interface.")
        if m["run"]:
            r = m["run"]
            out.append(f"- Test run ({r.get('data') or 'unknown'} data, {r.get('benchmark') or '?'}): {_outcome(r)} "
                       f"(recorded on {r.get('machine') or 'machine not recorded'}).")
            if r.get("error"):
                out.append(f"  - error: {short_error(r['error'])}")
        else:
            out.append("- Test run: not run yet.")
        for b, r in sorted(m.get("other_runs", {}).items()):
            line = f"- Run ({r.get('data') or 'unknown'} data, {b.split('/')[0]}): {_outcome(r)}."
            if r.get("error"):
                line += f" {short_error(r['error'])}"
            out.append(line)
        for e in m.get("extra_sources", []):
            out.append(f"- Extra source {e['name']}: {e['repository']}@{e['commit'][:12]} ({e['install']}), "
                       f"hash {e['hash'] or 'not recorded'}; offline, builds take it from a local copy "
                       "(`$PYREPRO_EXTRA_SOURCES` or `<cache>/extra-sources/<name>-<commit>`).")
        if m.get("notes"):
            out.append(f"- Notes: {m['notes']}")
        out.append(f"- Nix package: {m['nix']}.")
        if m["gpu"] != "none":
            out.append(f"- GPU ({m['gpu']}): {m['gpu_runs']}.")
        out.append("")
    return "\n".join(out) + "\n"


def stale_lines(committed: str, generated: str) -> list[tuple[int, str, str]]:
    """Where a committed STATUS.md differs from what the generator writes now, the time of
    generation aside: (line in the committed file, its lines there, the generator's lines there),
    one per changed stretch ("" where one side has none)."""
    import difflib

    def unstamped(text: str) -> list[str]:
        return [_STAMP.sub(r"\1<time>\2", ln) for ln in text.splitlines()]

    a, b = unstamped(committed), unstamped(generated)
    return [(i1 + 1, "\n".join(a[i1:i2]), "\n".join(b[j1:j2]))
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"]


def check_report(registry: Registry, paths: Paths, out_md: Path, out_json: Path) -> None:
    """``pyrepro report --check``: regenerate in memory from the committed records (no refresh
    from this machine's cache) and compare with ``out_md`` and its JSON twin, the time of
    generation aside. Writes nothing; raises ``IntegrityError`` naming the first differing lines."""
    from pyrepro.errors import IntegrityError

    rep = build_report(registry, paths)
    problems: list[str] = []
    try:
        committed = out_md.read_text(encoding="utf-8")
    except OSError as exc:
        raise IntegrityError(f"{out_md}: cannot be read ({exc.strerror or exc})",
                             hint="run `pyrepro report` to write it") from exc
    stale = stale_lines(committed, render_markdown(rep))
    problems += [f"{out_md.name}:{n}: " + (f"has {old[:100]!r}, the generator writes {new[:100]!r}" if old and new
                                            else f"lacks {new[:100]!r}, which the generator writes" if new
                                            else f"has {old[:100]!r}, which the generator does not write")
                 for n, old, new in stale[:3]]
    if len(stale) > 3:
        problems.append(f"and {len(stale) - 3} more differences")
    try:
        twin = json.loads(out_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        twin = None
    if not isinstance(twin, dict) or {k: v for k, v in twin.items() if k != "generated"} != \
            {k: v for k, v in rep.items() if k != "generated"}:
        problems.append(f"{out_json.name} differs from what the generator writes")
    if problems:
        raise IntegrityError(f"{out_md} is not what `pyrepro report` generates: " + "; ".join(problems),
                             hint="never edit it by hand: change pyrepro/report.py or the records it reads "
                                  "(model.toml, lock.toml, last-run.json), then run `pyrepro report` and commit both "
                                  "files")


def write_report(registry: Registry, paths: Paths, out_md: Path, out_json: Path, *,
                 refresh: bool = True) -> dict[str, Any]:
    if refresh:
        refresh_summaries(registry, paths)
    rep = build_report(registry, paths)
    atomic_write_text(out_json, json.dumps(rep, indent=2) + "\n")
    atomic_write_text(out_md, render_markdown(rep))
    return rep
