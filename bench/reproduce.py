"""`pyrepro reproduce` over a corpus of real submissions: one row per folder, and totals.

Usage: python bench/reproduce.py CONTRIBUTIONS_DIR [--corpus bench/corpus.toml] [--root DIR]
                                 [--timeout MIN] [--only a,b] [--markdown OUT.md] [--gc]

Each folder runs as `pyrepro reproduce FOLDER --json` in a scratch project (``--root``, default a
temporary folder with empty models/ and patches/) sharing the user's cache, so environments
and downloads are reused between runs. A folder that exceeds --timeout minutes is recorded as
such. Prints one row per folder: the stage reached, the lock category, seconds, and the reason
it stopped; then how many reached a passing import check. The lock category shown is the one
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("contributions", type=Path)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).with_name("corpus.toml"))
    ap.add_argument("--root", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--gc", action="store_true", help="remove each folder's environment after its row")
    a = ap.parse_args()
    corpus = tomllib.loads(a.corpus.read_text())
    folders = [f for f in corpus["folders"] if not a.only or f in a.only.split(",")]
    root = a.root or Path(tempfile.mkdtemp(prefix="pyrepro-corpus-"))
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "patches").mkdir(exist_ok=True)
    (root / "flake.nix").touch()
    exe = Path(sys.executable).parent / "pyrepro"
    pyrepro = str(exe) if exe.exists() else (shutil.which("pyrepro") or "pyrepro")
    env = {**os.environ, "PYREPRO_ROOT": str(root)}
    rows = []
    t_all = time.perf_counter()
    for name in folders:
        folder = a.contributions / name
        t = time.perf_counter()
        proc = subprocess.Popen([pyrepro, "reproduce", str(folder), "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        try:
            out, errtext = proc.communicate(timeout=a.timeout * 60)
            doc = json.loads(out) if out.strip().startswith("{") else None
            rec = doc.get("result") if isinstance(doc, dict) else None  # the --json envelope (docs/json.md)
            err = errtext.strip().splitlines()[-1] if errtext.strip() else ""
        except subprocess.TimeoutExpired:
            # a termination signal to the whole group (pdm and pip too): pyrepro saves the stages it
            # reached ("interrupted") before it exits; what it had reached is named in the row
            rec, err = None, f"timed out after {a.timeout:.0f} min"
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
    summary = f"{ok} of {len(rows)} reached a passing import check; total {total / 60:.1f} min"
    print(summary)
    if a.markdown:
        a.markdown.write_text(f"Corpus: {corpus['repository']} @ {corpus['commit'][:12]}\n\n" + "\n".join(lines)
                              + f"\n\n{summary}\n")


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
