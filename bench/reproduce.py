"""`pyrepro reproduce` over a corpus of real submissions: one row per folder, and totals.

Usage: python bench/reproduce.py CONTRIBUTIONS_DIR [--corpus bench/corpus.toml] [--root DIR]
                                 [--timeout MIN] [--only a,b] [--markdown OUT.md] [--gc]
       python bench/reproduce.py CORPUS2_DIR --corpus bench/corpus2.toml --half dev|held [...]

Two corpus shapes. bench/corpus.toml: one repository and commit, ``folders`` a list of folder names
under CONTRIBUTIONS_DIR (default timeout 20 minutes). bench/corpus2.toml: ``[[entry]]`` tables, each
with its own repository, commit, path, ``id`` and ``half``; the folder is CORPUS2_DIR/<id> and
``--half`` (required) picks the entries (default timeout 10 minutes, the issue's budget). ``--half
held`` is the held-back measurement: it refuses to start unless PYREPRO_CACHE names an empty or
absent directory.

Each folder runs as `pyrepro reproduce FOLDER --json` in a scratch project (``--root``, default a
temporary folder with empty models/ and patches/) sharing the user's cache, so environments
and downloads are reused between runs. A folder that exceeds --timeout minutes is recorded as
such. Prints one row per folder: the stage reached, the lock category, seconds, and the reason
it stopped; then how many reached a passing import check. Each folder's whole ``--json`` record
is kept in ROOT/records/<folder>.json. The lock category shown is the one
that counts (``category`` of the record: set once the environment built; 4 when it did not).
``--gc`` removes each folder's environment after its row (``pyrepro gc NAME``), so a corpus of
multi-GB environments fits on a small disk.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from statistics import median


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("contributions", type=Path)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).with_name("corpus.toml"))
    ap.add_argument("--root", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=None,
                    help="minutes per folder (default 20 for a folders list, 10 for [[entry]] corpora)")
    ap.add_argument("--only", default="")
    ap.add_argument("--half", choices=("dev", "held"), default=None,
                    help="with an [[entry]] corpus (bench/corpus2.toml): which half to run")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--gc", action="store_true", help="remove each folder's environment after its row")
    a = ap.parse_args()
    corpus = tomllib.loads(a.corpus.read_text())
    entries = corpus.get("entry")
    if entries is not None:
        if a.half is None:
            sys.exit(f"{a.corpus} is split in halves: say --half dev (or held, once, at the end)")
        if a.half == "held":
            cache = os.environ.get("PYREPRO_CACHE")
            if not cache or (Path(cache).exists() and any(Path(cache).iterdir())):
                sys.exit("the held half is measured once, from an empty cache: set PYREPRO_CACHE to an empty "
                         "or absent directory")
        entries = [e for e in entries if e["half"] == a.half]
        folders = [e["id"] for e in entries if not a.only or e["id"] in a.only.split(",")]
        title = f"{a.corpus.name}, half {a.half} ({len(folders)} of {len(corpus['entry'])} entries)"
        timeout = 10.0 if a.timeout is None else a.timeout
    else:
        folders = [f for f in corpus["folders"] if not a.only or f in a.only.split(",")]
        title = f"{corpus['repository']} @ {corpus['commit'][:12]}"
        timeout = 20.0 if a.timeout is None else a.timeout
    missing = [f for f in folders if not (a.contributions / f).is_dir()]
    if entries is not None and missing:
        sys.exit(f"not materialised under {a.contributions}: {', '.join(missing)}")
    root = a.root or Path(tempfile.mkdtemp(prefix="pyrepro-corpus-"))
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "patches").mkdir(exist_ok=True)
    (root / "flake.nix").touch()
    exe = Path(sys.executable).parent / "pyrepro"
    pyrepro = str(exe) if exe.exists() else (shutil.which("pyrepro") or "pyrepro")
    env = {**os.environ, "PYREPRO_ROOT": str(root)}
    code = _code_commit()  # at the start: other commits may land while a long run goes on
    rows = []
    t_all = time.perf_counter()
    for name in folders:
        folder = a.contributions / name
        t = time.perf_counter()
        # pyrepro's own budget ends first, so the stage it ran out in says so; the kill is the backstop
        proc = subprocess.Popen([pyrepro, "reproduce", str(folder), "--json", "--budget", f"{max(timeout - 0.5, 0.5):g}"],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        try:
            out, errtext = proc.communicate(timeout=timeout * 60)
            doc = json.loads(out) if out.strip().startswith("{") else None
            if doc is not None:  # the whole record, for reading a row's reason in full later
                (root / "records").mkdir(exist_ok=True)
                (root / "records" / f"{name}.json").write_text(out)
            rec = doc.get("result") if isinstance(doc, dict) else None  # the --json envelope (docs/json.md)
            err = errtext.strip().splitlines()[-1] if errtext.strip() else ""
        except subprocess.TimeoutExpired:
            # a termination signal to the whole group (pdm and pip too): pyrepro saves the stages it
            # reached ("interrupted") before it exits; what it had reached is named in the row
            rec, err = None, f"timed out after {timeout:.0f} min"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
            err += _reached(folder, t)
        dt = time.perf_counter() - t
        if rec is None:
            rows.append([name, "-", "-", "-", f"{dt:.0f}", " ".join(err.split())[:160]])
        else:
            stop = rec["stopped_at"]
            lock = next((s for s in rec["stages"] if s["stage"] == "lock"), {})
            reached = stop or "imports ok"
            reason = next((s["detail"] for s in rec["stages"] if s["stage"] == stop), "") if stop else \
                next((s["detail"] for s in rec["stages"] if s["stage"] == "imports"), "")
            cat = rec.get("category") or (f"{lock['category']}?" if lock.get("category") else "-")
            rows.append([name, rec["python"]["version"], reached, str(cat), f"{dt:.0f}",
                         " ".join(reason.split())[:160]])
        print(" | ".join(rows[-1]), flush=True)
        if a.gc:
            from pyrepro.reproduce import default_name

            model = rec["name"] if rec else default_name(folder)
            subprocess.run([pyrepro, "gc", model], capture_output=True, env=env, check=False)
    total = time.perf_counter() - t_all
    ok = sum(1 for r in rows if r[2] == "imports ok")
    head = ["folder", "python", "stopped at", "lock cat", "seconds", "reason / modules imported"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    secs = [float(r[4]) for r in rows]
    stages: dict[str, int] = {}
    for r in rows:
        stages[r[2]] = stages.get(r[2], 0) + 1
    summary = (f"{ok} of {len(rows)} reached a passing import check; total {total / 60:.1f} min"
               + (f"; per folder median {median(secs):.0f} s, max {max(secs):.0f} s" if secs else "")
               + "\nstopped at: " + ", ".join(f"{k} {v}" for k, v in sorted(stages.items())))
    print(summary)
    if a.markdown:
        a.markdown.write_text(f"Corpus: {title}; pyrepro {code} at the start; timeout {timeout:.0f} min per folder\n\n"
                              + "\n".join(lines) + f"\n\n{summary}\n")


def _code_commit() -> str:
    """The commit of the pyrepro checkout this bench ran, with "+dirty" when the tree had changes."""
    here = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", "pyrepro"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _reached(folder: Path, started: float) -> str:
    """The stages a timed-out reproduction had finished, from the record it saved when stopped."""
    from pyrepro.paths import cache_dir
    from pyrepro.reproduce import default_name

    saved = cache_dir() / "reproduce" / f"{default_name(folder)}.json"
    try:
        if saved.stat().st_mtime < time.time() - (time.perf_counter() - started):
            return ""  # a record of an earlier run
        doc = json.loads(saved.read_text())
    except (OSError, ValueError):
        return ""
    done = [f"{s['stage']} {s['status']} ({s['seconds']:.0f} s)" for s in doc.get("stages", [])
            if s.get("status") in ("ok", "failed")]
    return f" during {doc.get('stopped_at') or '?'}; " + ", ".join(done) if done else ""


if __name__ == "__main__":
    main()
