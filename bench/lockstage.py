"""The lock stage alone over an ``[[entry]]`` corpus: `pyrepro init` then `pyrepro lock`, per folder.

Usage: python bench/lockstage.py CORPUS.toml CORPUS_DIR --half dev|held|all --out RESULTS.json
                                 [--budget-min 10] [--only a,b] [--rerun] [--keep-roots DIR]
                                 [--no-aarch64]

For every entry of that half (CORPUS_DIR/<id>/, as bench/materialise.py writes it), in a fresh
temporary registry (a scratch PYREPRO_ROOT with empty models/ and patches/ and a flake.nix, the
way bench/reproduce.py runs `pyrepro reproduce`), this runs

    pyrepro init CORPUS_DIR/<id> --name <id> --json
    pyrepro lock <id> --json --timeout <minutes left>

under one wall-clock budget per entry (--budget-min, default 10 minutes, for init and lock
together; the process group is terminated when it runs out). The user's PYREPRO_CACHE is shared,
as with bench/reproduce.py; `--half held` (or all) refuses to start unless PYREPRO_CACHE names
an empty or absent directory (the held half is measured once, from an empty cache).

Recorded per entry: seconds and exit code of init and of lock, the Python init chose, the lock's
category / label / strategy / ok, the reason it stopped (first lines), the attempts, and from
models/<id>/lock.toml the relaxation steps (rule, package, before, after). Every exact pin the
draft pyproject.toml declared after init (``name==X.Y.Z``) is compared with the versions of that
package in the written pdm.lock and classed as "kept release", "same minor", "same major",
"other major", or "dropped" (not in the lock); "relaxed" pins are all but "kept release".

Results are appended, one JSON line per entry, to RESULTS.jsonl (RESULTS with .jsonl for its
suffix) as each entry ends, so an interrupted run resumes where it stopped: entries already in
that file are skipped unless --rerun. RESULTS itself is rewritten after every entry with all
records so far and the summary (locked / stopped, categories, strategies, median and max lock
seconds, pin classes). A crash in one entry is recorded for it and the run goes on. The table
and summary are printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path
from statistics import median
from typing import Any

try:
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - the project venv has packaging
    Version = None  # type: ignore[assignment,misc]
    InvalidVersion = ValueError  # type: ignore[assignment,misc]

REPO = Path(__file__).resolve().parent.parent
CLASSES = ("kept release", "same minor", "same major", "other major", "dropped")


# --------------------------------------------------------------------------- pins

def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*===?\s*([^\s,;*]+)\s*(;.*)?$")


def exact_pins(dependencies: list[str]) -> dict[str, str]:
    """``name==version`` requirements (no wildcard, no other clause) of a dependency list."""
    out: dict[str, str] = {}
    for dep in dependencies:
        m = _PIN.match(dep)
        if m:
            out[norm(m.group(1))] = m.group(3)
    return out


def classify(declared: str, locked: list[str]) -> str:
    """How far the closest locked version is from a declared exact pin."""
    if not locked:
        return "dropped"
    best = "other major"
    order = {c: i for i, c in enumerate(CLASSES)}
    for v in locked:
        c = _distance(declared, v)
        if order[c] < order[best]:
            best = c
    return best


def _distance(declared: str, locked: str) -> str:
    if Version is None:
        return "kept release" if declared == locked else "other major"
    try:
        a, b = Version(declared), Version(locked)
    except InvalidVersion:
        return "kept release" if declared == locked else "other major"
    if Version(a.public) == Version(b.public):
        return "kept release"
    if a.release[:2] == b.release[:2]:
        return "same minor"
    if a.release[:1] == b.release[:1]:
        return "same major"
    return "other major"


def locked_versions(pdm_lock: Path) -> dict[str, list[str]]:
    if not pdm_lock.is_file():
        return {}
    doc = tomllib.loads(pdm_lock.read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for pkg in doc.get("package", []):
        name, version = pkg.get("name"), pkg.get("version")
        if name and version and version not in out.setdefault(norm(name), []):
            out[norm(name)].append(version)
    return out


# --------------------------------------------------------------------------- running

def run(cmd: list[str], env: dict[str, str], timeout: float, cwd: Path) -> dict[str, Any]:
    """Run ``cmd`` in its own process group; on timeout terminate the group (then kill it)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=max(timeout, 1.0))
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    doc = None
    text = (out or "").strip()
    if text.startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            doc = json.loads(text)
    return {"seconds": round(time.perf_counter() - t, 1), "exit": proc.returncode, "timed_out": timed_out,
            "envelope": doc, "stderr_tail": "\n".join((err or "").strip().splitlines()[-15:])}


def first_lines(text: str | None, n: int = 3, width: int = 400) -> str:
    if not text:
        return ""
    lines = [ln.rstrip() for ln in str(text).strip().splitlines() if ln.strip()][:n]
    return "\n".join(lines)[:width]


def one_entry(entry: dict[str, Any], folder: Path, pyrepro: str, budget_s: float, aarch64: bool,
              keep_roots: Path | None, pdm: bool = False) -> dict[str, Any]:
    name = entry["id"].lower()  # a model name is lower-case (mlearn_analysis_Cu_mace)
    rec: dict[str, Any] = {"id": entry["id"], "half": entry.get("half"), "repository": entry.get("repository") or entry.get("repo"),
                           "commit": entry.get("commit"), "year": entry.get("year"),
                           "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    root = Path(tempfile.mkdtemp(prefix=f"pyrepro-lockstage-{name}-"))
    try:
        (root / "models").mkdir()
        (root / "patches").mkdir()
        (root / "flake.nix").touch()
        env = {**os.environ, "PYREPRO_ROOT": str(root)}
        deadline = time.monotonic() + budget_s
        if not folder.is_dir():
            rec.update(stage="init", stop_reason=f"not materialised: {folder}")
            return rec

        # 1. init
        r = run([pyrepro, "init", str(folder), "--name", name, "--json"], env, budget_s, root)
        env_doc = r["envelope"] or {}
        res = env_doc.get("result") or {}
        rec["init"] = {"seconds": r["seconds"], "exit": r["exit"], "timed_out": r["timed_out"],
                       "python": (res.get("python") or {}).get("version"),
                       "python_reason": (res.get("python") or {}).get("reason"),
                       "distributions": len(res.get("distributions") or [])}
        model_dir = root / "models" / name
        if r["exit"] != 0 or not (model_dir / "pyproject.toml").is_file():
            err = (env_doc.get("error") or {}).get("message") if env_doc else None
            rec.update(stage="init", stop_reason=("timed out" if r["timed_out"] else "")
                       + first_lines(err or r["stderr_tail"]))
            return rec
        project = tomllib.loads((model_dir / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        declared = project.get("dependencies", [])
        rec["declared"] = {"dependencies": len(declared), "requires_python": project.get("requires-python")}
        pins = exact_pins(declared)

        # 2. lock
        left = deadline - time.monotonic()
        if left < 5:
            rec.update(stage="lock", stop_reason="no time left for the lock after init")
            return rec
        cmd = [pyrepro, "lock", name, "--json", "--timeout", f"{max(left / 60, 0.1):.2f}"]
        if not aarch64:
            cmd.append("--no-aarch64")
        if not pdm:  # the lock stage of `pyrepro reproduce`: uv's resolution first, for this machine
            cmd.append("--uv-first")
        r = run(cmd, env, left, root)
        env_doc = r["envelope"] or {}
        outcomes = env_doc.get("result") if isinstance(env_doc.get("result"), list) else []
        out = outcomes[0] if outcomes else {}
        record: dict[str, Any] = {}
        with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
            record = tomllib.loads((model_dir / "lock.toml").read_text(encoding="utf-8"))
        category = out.get("category", record.get("category"))
        rec["lock"] = {
            "seconds": r["seconds"], "exit": r["exit"], "timed_out": r["timed_out"],
            "category": category, "label": out.get("label", record.get("category_label")),
            "strategy": out.get("strategy", record.get("strategy")),
            "ok": category in (1, 2, 3) if category is not None else False,
            "resolver_seconds": out.get("seconds", record.get("seconds")),
            "packages": out.get("packages", record.get("packages")),
            "python": out.get("python", record.get("python")),
            "exclude_newer": out.get("exclude_newer", record.get("exclude_newer")),
            "attempts": [{k: a.get(k) for k in ("strategy", "ok", "seconds", "exclude_newer")}
                         for a in (out.get("attempts") or record.get("attempts") or [])],
            "steps": [{k: s.get(k) for k in ("rule", "package", "before", "after")}
                      for s in (record.get("steps") or out.get("steps") or []) if isinstance(s, dict)],
            "drift": ([f"{d.get('package')} {d.get('declared')} -> {d.get('locked')}" for d in out["drift"]]
                      if out.get("drift") else list(record.get("drift") or [])),
        }
        if r["timed_out"]:
            stop = f"timed out after {budget_s / 60:.1f} min (budget)"
        elif category in (1, 2, 3):
            stop = ""
        else:
            err = (env_doc.get("error") or {}).get("message") if env_doc else None
            stop = first_lines(out.get("message") or record.get("message") or err or r["stderr_tail"])
        rec["stage"] = "locked" if rec["lock"]["ok"] else "lock"
        rec["stop_reason"] = stop
        rec["searches"] = [{k: x.get(k) for k in ("ok", "python", "queries", "seconds", "proof", "culprits", "relaxed",
                                                  "spent")} for x in (record.get("searches") or [])]
        if not rec["lock"]["ok"]:
            # the criterion, checked apart from pyrepro's own search: does the fully relaxed set
            # (every declared requirement by its bare name, the same date bound) resolve on this Python
            # or an older one of the era?
            rec["fully_relaxed"] = fully_relaxed(model_dir, record, env)

        # 3. the declared exact pins against pdm.lock
        locked = locked_versions(model_dir / "pdm.lock") if rec["lock"]["ok"] else {}
        rows = []
        for pkg, ver in sorted(pins.items()):
            versions = locked.get(pkg, [])
            rows.append({"package": pkg, "declared": ver, "locked": versions,
                         "class": classify(ver, versions) if rec["lock"]["ok"] else None})
        rec["pins"] = rows
        counts = {c: sum(1 for p in rows if p["class"] == c) for c in CLASSES}
        rec["pin_classes"] = counts if rec["lock"]["ok"] else None
        rec["pins_declared"] = len(rows)
        rec["pins_relaxed"] = sum(v for c, v in counts.items() if c != "kept release") if rec["lock"]["ok"] else None
        return rec
    finally:
        if keep_roots is not None:
            keep_roots.mkdir(parents=True, exist_ok=True)
            dest = keep_roots / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.move(str(root), dest)
        else:
            shutil.rmtree(root, ignore_errors=True)


def fully_relaxed(model_dir: Path, record: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """``uv pip compile`` of the pyproject's requirements by their bare names, for the lock's Python
    and the older ones of its era, under the record's date bound: where it resolves, or not."""
    from packaging.requirements import InvalidRequirement, Requirement

    from pyrepro.interpreters import era_pythons, first_patch
    from pyrepro.uvtool import uv_executable

    project = tomllib.loads((model_dir / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    model = tomllib.loads((model_dir / "model.toml").read_text(encoding="utf-8"))
    bare = []
    for d in project.get("dependencies", []):
        try:
            r = Requirement(d)
        except InvalidRequirement:
            continue
        bare.append(r.name + (f"; {r.marker}" if r.marker else ""))
    python = str(record.get("python") or model.get("python") or "3.11")
    submitted = model.get("submitted")
    day = dt.date.fromisoformat(str(submitted)) if submitted else None
    bound = record.get("exclude_newer")
    out: dict[str, Any] = {"requirements": len(bare), "bound": bound, "resolves_on": [], "not_on": []}
    uv = uv_executable() or "uv"
    with tempfile.TemporaryDirectory() as tmp:
        req_in = Path(tmp) / "req.in"
        req_in.write_text("".join(f"{b}\n" for b in bare), encoding="utf-8")
        for py in (python, *era_pythons(python, day)):
            cmd = [uv, "pip", "compile", str(req_in), "--python-version", first_patch(py), "--python-platform",
                   "x86_64-manylinux_2_28", "--quiet", "--no-header", "--no-config"]
            if bound:
                cmd += ["--exclude-newer", f"{bound}T00:00:00Z"]
            try:
                done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
                (out["resolves_on"] if done.returncode == 0 else out["not_on"]).append(py)
                if done.returncode != 0 and "why" not in out:
                    out["why"] = first_lines(done.stderr)
            except subprocess.TimeoutExpired:
                out["not_on"].append(f"{py} (timed out)")
    return out


def scrub(text: str) -> str:
    """``text`` with this machine's folders named by what they are (result files are committed; no
    machine path goes into the repository): the checkout as relative paths, the cache as
    $PYREPRO_CACHE, the folder beside the checkout (corpora, a frozen worktree, other caches) as
    $WORK, the home folder as ~."""
    cache = os.environ.get("PYREPRO_CACHE")
    for path, name in ((str(REPO) + "/", ""), (cache, "$PYREPRO_CACHE"), (str(REPO.parent) + "/", "$WORK/"),
                       (str(Path.home()) + "/", "~/")):
        if path:
            text = text.replace(path, name)
    return text


# --------------------------------------------------------------------------- reporting

def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    locked = [r for r in records if (r.get("lock") or {}).get("ok")]
    lock_s = [r["lock"]["seconds"] for r in records if r.get("lock")]
    cats: dict[str, int] = {}
    strategies: dict[str, int] = {}
    for r in records:
        c = (r.get("lock") or {}).get("category")
        cats[str(c) if c is not None else "none"] = cats.get(str(c) if c is not None else "none", 0) + 1
        if (r.get("lock") or {}).get("ok"):
            s = str(r["lock"].get("strategy"))
            strategies[s] = strategies.get(s, 0) + 1
    pins = {c: sum((r.get("pin_classes") or {}).get(c, 0) for r in locked) for c in CLASSES}
    return {
        "entries": len(records), "locked": len(locked), "stopped": len(records) - len(locked),
        "crashed": sum(1 for r in records if r.get("crash")),
        "timed_out": sum(1 for r in records if (r.get("lock") or {}).get("timed_out") or (r.get("init") or {}).get("timed_out")),
        "categories": dict(sorted(cats.items())), "strategies": strategies,
        "lock_seconds_median": round(median(lock_s), 1) if lock_s else None,
        "lock_seconds_max": round(max(lock_s), 1) if lock_s else None,
        "init_seconds_median": round(median([r["init"]["seconds"] for r in records if r.get("init")]), 1)
        if any(r.get("init") for r in records) else None,
        "relaxation_steps": sum(len((r.get("lock") or {}).get("steps") or []) for r in records),
        "pins_in_locked_entries": pins,
    }


def table(records: list[dict[str, Any]]) -> str:
    head = ["id", "init s", "lock s", "exit", "cat", "strategy", "steps", "pins kept/moved/dropped", "stop reason"]
    rows = []
    for r in records:
        lk = r.get("lock") or {}
        pc = r.get("pin_classes")
        pins = (f"{pc['kept release']}/{sum(pc[c] for c in ('same minor', 'same major', 'other major'))}/{pc['dropped']}"
                if pc else f"-/-/- of {r.get('pins_declared', '-')}")
        stop = " ".join(str(r.get("crash") or r.get("stop_reason") or "").split())[:90]
        rows.append([r["id"], str((r.get("init") or {}).get("seconds", "-")), str(lk.get("seconds", "-")),
                     str(lk.get("exit", (r.get("init") or {}).get("exit", "-"))), str(lk.get("category", "-")),
                     str(lk.get("strategy") or "-"), str(len(lk.get("steps") or [])), pins, stop])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths[:-1]) + "  {}"
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in rows]
    return "\n".join(lines)


def code_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "pyrepro"], capture_output=True,
                               text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("corpus_dir", type=Path)
    ap.add_argument("--half", choices=("dev", "held", "all"), required=True)
    ap.add_argument("--out", type=Path, required=True, help="RESULTS.json (entries go to RESULTS.jsonl as they end)")
    ap.add_argument("--budget-min", type=float, default=10.0, help="wall-clock minutes per entry, init and lock")
    ap.add_argument("--only", default="", help="comma-separated ids (within the half)")
    ap.add_argument("--rerun", action="store_true", help="run entries already in RESULTS.jsonl again")
    ap.add_argument("--keep-roots", type=Path, default=None, help="keep each entry's scratch registry under DIR/<id>")
    ap.add_argument("--no-aarch64", action="store_true", help="pass --no-aarch64 to pyrepro lock")
    ap.add_argument("--pdm", action="store_true", help="lock with pdm for every target (pyrepro lock without "
                                                        "--uv-first); default: reproduce's lock stage, uv first")
    a = ap.parse_args()

    corpus = tomllib.loads(a.corpus.read_text())
    entries = corpus.get("entry")
    if not entries:
        sys.exit(f"{a.corpus} has no [[entry]] tables")
    if a.half in ("held", "all"):
        cache = os.environ.get("PYREPRO_CACHE")
        if not cache or (Path(cache).exists() and any(Path(cache).iterdir())):
            sys.exit("the held half is measured once, from an empty cache: set PYREPRO_CACHE to an empty "
                     "or absent directory")
    chosen = [e for e in entries if a.half == "all" or e.get("half") == a.half]
    if a.only:
        keep = set(a.only.split(","))
        unknown = keep - {e["id"] for e in chosen}
        if unknown:
            sys.exit(f"not in half {a.half}: {', '.join(sorted(unknown))}")
        chosen = [e for e in chosen if e["id"] in keep]

    exe = Path(sys.executable).parent / "pyrepro"
    pyrepro = str(exe) if exe.exists() else (shutil.which("pyrepro") or str(REPO / ".venv" / "bin" / "pyrepro"))
    jsonl = a.out.with_suffix(".jsonl")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict[str, Any]] = {}
    if jsonl.is_file():
        for line in jsonl.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                r = json.loads(line)
                if isinstance(r, dict) and "id" in r:
                    done[r["id"]] = r
    meta = {"corpus": str(a.corpus), "corpus_dir": str(a.corpus_dir), "half": a.half, "budget_min": a.budget_min,
            "code": code_commit(), "pyrepro": pyrepro, "cache": os.environ.get("PYREPRO_CACHE") or "(default)",
            "aarch64": not a.no_aarch64, "locker": "pdm" if a.pdm else "uv first (reproduce's lock stage)"}
    ids = [e["id"] for e in chosen]

    def write_out() -> list[dict[str, Any]]:
        records = [done[i] for i in ids if i in done]
        a.out.write_text(scrub(json.dumps({**meta, "written": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                           "entries": records, "summary": summary(records)}, indent=1) + "\n"))
        return records

    print(f"{a.corpus.name}, half {a.half}: {len(chosen)} entries, {a.budget_min:g} min each; code {meta['code']}",
          file=sys.stderr)
    for e in chosen:
        if e["id"] in done and not a.rerun:
            print(f"  {e['id']}: already in {jsonl.name}, skipped", file=sys.stderr)
            continue
        print(f"  {e['id']} ...", file=sys.stderr, flush=True)
        try:
            rec = one_entry(e, a.corpus_dir / e["id"], pyrepro, a.budget_min * 60, not a.no_aarch64, a.keep_roots,
                            a.pdm)
        except Exception as exc:  # one entry's crash never stops the others
            rec = {"id": e["id"], "half": e.get("half"), "stage": "crash",
                   "crash": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
        rec["code"] = meta["code"]
        done[e["id"]] = rec
        with jsonl.open("a", encoding="utf-8") as f:
            f.write(scrub(json.dumps(rec)) + "\n")
        write_out()
        lk = rec.get("lock") or {}
        print(f"    {rec.get('stage')}: category {lk.get('category', '-')} {lk.get('strategy') or ''} "
              f"in {lk.get('seconds', '-')} s {first_lines(rec.get('crash') or rec.get('stop_reason'), 1, 120)}",
              file=sys.stderr, flush=True)
    records = write_out()
    print(table(records))
    s = summary(records)
    print(f"\n{s['entries']} entries: {s['locked']} locked, {s['stopped']} stopped ({s['timed_out']} timed out, "
          f"{s['crashed']} crashed); categories {s['categories']}; strategies {s['strategies']}")
    print(f"lock seconds: median {s['lock_seconds_median']}, max {s['lock_seconds_max']}; "
          f"relaxation steps: {s['relaxation_steps']}")
    print("declared exact pins in locked entries: " + ", ".join(f"{k} {v}" for k, v in s["pins_in_locked_entries"].items()))
    print(f"results: {a.out} (per entry: {jsonl})")


if __name__ == "__main__":
    main()
