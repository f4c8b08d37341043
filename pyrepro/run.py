"""Running models: a fresh work directory, the uniform CLI, logs, provenance, a verdict.

``run_model`` builds (local backend; cache hits are cheap), prepares the data (``fixture``:
pyrepro's offline dataset; ``jarvis``: the pinned benchmark folder plus the real figshare
datasets, never silently replaced by the fixture), runs the patched entry from a fresh work
directory with HOME and caches redirected and the staged source read-only, keeps stdout and
stderr logs, and writes a provenance record (``record.json``) with the verdict.

``run_benchmark`` runs every model serving a benchmark in turn; one failure does not stop the
others.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrepro import data as data_mod
from pyrepro import gpu, patches, proc, sandbox, sources, verdict
from pyrepro.backends import BuiltModel
from pyrepro.backends import local as local_backend
from pyrepro.errors import NetworkError, NotFoundError, PyreproError, RunError, UsageError
from pyrepro.fsutil import atomic_write_text
from pyrepro.paths import Paths
from pyrepro.proc import Runner
from pyrepro.progress import NULL_PROGRESS, Progress, output_detail
from pyrepro.registry import ModelSpec, Registry

BENCHMARK_ALIASES = {"exfoliation": "dft_3d_exfoliation_energy"}
# The pinned benchmarks folder (jarvis_leaderboard@57afc55f), used with --data jarvis.
BENCHMARKS_SUBDIR = "jarvis_leaderboard/benchmarks/AI/SinglePropertyPrediction"
BENCHMARKS_TREE = "1ae21b7be818569af3caff0daa4e952f8387301a"  # recorded; a partial mirror cannot match it


@dataclass(frozen=True)
class DataSource:
    kind: str  # fixture | jarvis
    benchmarks_dir: Path
    data_dir: Path
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "benchmarks_dir": str(self.benchmarks_dir), "data_dir": str(self.data_dir),
                "digest": self.digest}


@dataclass(frozen=True)
class RunRecord:
    model: str
    benchmark: str
    test: bool
    record_path: Path
    data: dict[str, Any]
    verdict: verdict.Verdict | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    cause: PyreproError | None = field(default=None, compare=False)  # the error that stopped it, with its hint

    @property
    def ok(self) -> bool:
        return self.verdict is not None and self.verdict.passed

    def to_json(self) -> dict[str, Any]:
        return self.data


def run_failure(record: RunRecord) -> RunError:
    """The error a failed run stands for (``reproduce --test`` stops on it: exit 12, never ok):
    its exit code, the verdict's reason and the end of its stderr."""
    data = record.data
    code = data.get("exit_code")
    why = record.error or (record.verdict.reason if record.verdict is not None else "no verdict")
    tail = (data.get("logs") or {}).get("stderr_tail", "").strip().splitlines()[-3:]
    return RunError(f"the {'test' if record.test else 'benchmark'} run of {record.model} failed (exit {code}): {why}"
                    + (f"; stderr ends: {' | '.join(tail)}" if tail else ""),
                    hint=f"see the run's logs beside {record.record_path}")


def resolve_benchmark(name: str) -> str:
    return BENCHMARK_ALIASES.get(name, name)


def unknown_benchmark(name: str, known: Iterable[str], message: str) -> UsageError:
    """The usage error for a benchmark name none of ``known`` is (``message`` says what was
    asked), with the closest benchmark names and aliases as a hint: ``exfoliaton`` -> did you
    mean exfoliation?"""
    import difflib

    names = set(known)
    names |= {alias for alias, bench in BENCHMARK_ALIASES.items() if bench in names}
    close: list[str] = []
    for c in difflib.get_close_matches(name, sorted(names), n=6):  # closest first; an alias and its benchmark once
        if resolve_benchmark(c) not in {resolve_benchmark(x) for x in close}:
            close.append(c)
    close = close[:3]
    hint = (f"did you mean {' or '.join(close)}?" if close else
            f"known benchmarks: {', '.join(sorted(names))}" if names else None)
    return UsageError(message, hint=hint)


def prepare_data(kind: str, paths: Paths, spec: ModelSpec, *, mirror: Path | None = None) -> DataSource:
    if kind == "fixture":
        fx = data_mod.write_fixture(paths.cache / "data" / f"fixture-v{data_mod.FIXTURE_VERSION}")
        return DataSource("fixture", fx.benchmarks_dir, fx.data_dir, fx.digest)
    if kind != "jarvis":
        raise UsageError(f"--data {kind!r}: use fixture or jarvis")
    bench = _real_benchmarks(spec, paths, mirror)
    ddir = paths.cache / "data" / "jarvis"
    needed = [d for d in data_mod.real_datasets()
              if any(u == spec.name or (u.endswith("*") and spec.name.startswith(u[:-1])) for u in d.used_by)]
    for d in needed:
        if not (ddir / d.file).is_file():
            try:
                data_mod.fetch_real(d.name, ddir)
            except NetworkError as exc:
                raise NetworkError(f"--data jarvis needs the real dataset {d.name} ({d.file}), which is not in {ddir} "
                                   f"and could not be downloaded: {exc.message}",
                                   hint="run with network access to figshare, or copy the file there by hand; "
                                        "pyrepro never falls back to fixture data") from exc
    h = hashlib.sha256()
    for d in needed:
        h.update(hashlib.sha256((ddir / d.file).read_bytes()).digest())
    return DataSource("jarvis", bench, ddir, "sha256:" + h.hexdigest())


def _real_benchmarks(spec: ModelSpec, paths: Paths, mirror: Path | None) -> Path:
    """The model's real benchmark zips, each checked against its sha256 pin, in the cache."""
    import shutil
    import tomllib
    from importlib.resources import files

    from pyrepro.errors import IntegrityError

    pins = {b["name"]: b["sha256"] for b in tomllib.loads(
        files("pyrepro").joinpath("data", "datasets.toml").read_text(encoding="utf-8")).get("benchmark", [])}
    out = paths.cache / "data" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    m = paths.mirror(mirror)
    for b in spec.benchmarks:
        name = f"{b}.json.zip"
        target = out / name
        if b not in pins:
            raise NotFoundError(f"benchmark {b} has no sha256 pin in pyrepro/data/datasets.toml",
                                hint="add a [[benchmark]] entry after checking the file")
        if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != pins[b]:
            src = (m / sources.repo_name(spec.source.repository) / BENCHMARKS_SUBDIR / name) if m else None
            if src is None or not src.is_file():
                raise NetworkError(f"--data jarvis needs the benchmark file {name}, which is neither cached in {out} "
                                   "nor in a mirror", hint="pass --mirror with a copy of the pinned repository; "
                                   "pyrepro never falls back to fixture data")
            tmp = target.with_suffix(".part")
            shutil.copyfile(src, tmp)
            got = hashlib.sha256(tmp.read_bytes()).hexdigest()
            if got != pins[b]:
                tmp.unlink()
                raise IntegrityError(f"benchmark {name} in {src.parent} does not match its pin", expected=pins[b], actual=got)
            os.replace(tmp, target)
    return out


_RO_SCRIPT = 'for d in "$PYREPRO_RO_DIRS"; do mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" || exit 97; done; exec "$@"'


def readonly_prefix(folder: Path, runner: Runner = proc.run) -> tuple[list[str], str]:
    """How the staged source is kept read-only for a run: (command prefix, description).

    Its files are read-only by mode (``make_read_only``), which binds ordinary users. Root
    ignores file modes, so for root the run goes through a private mount namespace in which
    the folder is bind-mounted read-only (``unshare --mount``), when the system allows it.
    """
    if os.geteuid() != 0:
        return [], "file modes (read-only files and folders)"
    if proc.which("unshare") is None:
        return [], "file modes only: running as root without unshare, so writes are NOT prevented"
    probe = runner(["unshare", "--mount", "--propagation", "private", "true"], check=False)
    if probe.returncode != 0:
        return [], "file modes only: running as root and mount namespaces are not allowed, so writes are NOT prevented"
    return (["env", f"PYREPRO_RO_DIRS={folder}", "unshare", "--mount", "--propagation", "private",
             "sh", "-c", _RO_SCRIPT, "sh"], "read-only bind mount in a private mount namespace")


SEED_CALLS = {"seed", "set_seed", "manual_seed", "set_random_seed"}
SEED_NAMES = {"random_state", "seed", "split_seed", "random_seed"}


def static_seeds(script: Path) -> list[str]:
    """Seeds the script sets, found statically: random.seed(N), np.random.seed(N), random_state=N ..."""
    try:
        tree = ast.parse(script.read_bytes())
    except (OSError, SyntaxError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in SEED_CALLS and node.args and isinstance(node.args[0], ast.Constant):
                out.append(f"{ast.unparse(fn)}({node.args[0].value!r}) at line {node.lineno}")
            for kw in node.keywords:
                if kw.arg in SEED_NAMES and isinstance(kw.value, ast.Constant):
                    out.append(f"{kw.arg}={kw.value.value!r} at line {node.lineno}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # parameter defaults: def get_train_val_loaders(..., split_seed=123)
            args = node.args
            pos = args.posonlyargs + args.args
            pairs = list(zip(pos[len(pos) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for a, d in pairs:
                if a.arg in SEED_NAMES and isinstance(d, ast.Constant) and d.value is not None:
                    out.append(f"{a.arg}={d.value!r} (default of {node.name}) at line {d.lineno}")
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, int) and not isinstance(node.value.value, bool):
            # module constants used as seeds: SEED = 42, random_seed = 1234567
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id.lower() in SEED_NAMES | {"random_seed", "rand_seed"}:
                    out.append(f"{t.id}={node.value.value!r} at line {node.lineno}")
    return out


def observed_seeds(path: Path, prefixes: dict[str, str]) -> list[dict[str, object]]:
    """The seed calls the run made (pyrepro/runtime's recorder: one JSON line per call), with
    machine paths cut to the work dir or ``<env>``; equal calls from one place counted once."""
    out: list[dict[str, object]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    seen = set()
    for ln in lines:
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if not isinstance(d, dict):
            continue
        caller = str(d.get("caller", ""))
        for pre, rep in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
            if pre and caller.startswith(pre + "/"):
                caller = (rep + "/" if rep else "") + caller[len(pre) + 1:]
                break
        key = (d.get("function"), repr(d.get("value")), caller)
        if key in seen:
            continue
        seen.add(key)
        out.append({"function": d.get("function"), "value": d.get("value"), "caller": caller})
    return out


def pyrepro_identity(paths: Paths) -> dict[str, str | None]:
    """pyrepro's own version and, from a checkout, the commit it ran at (read from .git, no
    subprocess), so a record says which pyrepro made it."""
    from pyrepro import __version__

    commit = None
    git = paths.root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            ref_file = git / ref
            if ref_file.is_file():
                commit = ref_file.read_text().strip()
            else:
                common = Path((git / "commondir").read_text().strip()) if (git / "commondir").is_file() else git
                common = common if common.is_absolute() else git / common
                packed = (common / "packed-refs").read_text() if (common / "packed-refs").is_file() else ""
                loose = common / ref
                commit = loose.read_text().strip() if loose.is_file() else next(
                    (ln.split()[0] for ln in packed.splitlines() if ln.endswith(" " + ref)), None)
        else:
            commit = head
    except (OSError, IndexError):
        commit = None
    return {"version": __version__, "commit": commit}


def _predictions_digest(path: Path) -> dict[str, Any] | None:
    """The predictions table itself (the csv inside the zip), hashed: equal predictions, equal
    hash, whatever the archive's own bytes."""
    if not path.is_file():
        return None
    try:
        raw, preds = verdict.read_predictions_zip(path)
    except verdict.PredictionsError as exc:
        return {"file": path.name, "error": str(exc)}
    return {"file": path.name, "csv_sha256": hashlib.sha256(raw).hexdigest(), "rows": len(preds)}


def _sha_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _submitted_digests(paths: Paths, spec: ModelSpec, bench: str, mirror: Path | None) -> dict[str, str | None]:
    """Content digests of the other registry models' submitted predictions for ``bench`` (their
    pinned sources, from the source cache or the mirror; a model whose source cannot be had is
    left out and said nowhere else, since it can only make a twin go unnoticed)."""
    from pyrepro.errors import PyreproError as _Err
    from pyrepro.registry import load_registry

    out: dict[str, str | None] = {}
    for other in load_registry(paths.models):
        if other.name == spec.name:
            continue
        for p in other.predictions:
            if p.benchmark != bench:
                continue
            try:
                src = sources.obtain_source(other.source, mirror=mirror, cache=paths.cache).path
            except (_Err, OSError):
                continue
            out[other.name] = verdict.predictions_digest(src / p.file)
    return out


def run_model(spec: ModelSpec, paths: Paths, *, benchmark: str | None = None, test: bool = False,
              data_kind: str = "fixture", use_gpu: bool = False, mirror: Path | None = None,
              runner: Runner = proc.run, progress: Progress = NULL_PROGRESS, timeout: float | None = None,
              built: BuiltModel | None = None) -> RunRecord:
    bench = resolve_benchmark(benchmark or spec.default_benchmark)
    if bench not in spec.benchmarks:
        raise unknown_benchmark(bench, spec.benchmarks,
                                f"{spec.name} does not serve benchmark {bench!r}; it serves {', '.join(spec.benchmarks)}")
    # the GPU decision comes first: a model that requires a GPU is refused before anything is
    # built (the same policy as the Nix wrapper, pyrepro/data/gpu-wrapper.sh)
    discovery = gpu.discover_driver()
    decision = gpu.decide(spec.gpu, use_gpu, discovery)
    if decision.level == "error":
        from pyrepro.errors import MissingToolError

        raise MissingToolError(decision.message, hint="run it on a machine with an NVIDIA driver")
    box = sandbox.choose()  # refused here, before anything is built, when there is none
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = paths.cache / "runs" / spec.name / stamp
    work, out, logs = run_dir / "work", run_dir / "out", run_dir / "logs"
    for d in (work / "home" / ".cache", work / "home" / ".mpl", out, logs):
        d.mkdir(parents=True, exist_ok=True)
    label = f"run {spec.name}"
    progress.start(label, total=3)
    stage = "build"
    try:
        b = built or local_backend.build(spec, paths, mirror=mirror, runner=runner, progress=progress)
        progress.advance(label, 1, "built")
        stage = "verify"
        checked = verify_built(spec, b)
        stage = "data"
        ds = prepare_data(data_kind, paths, spec, mirror=mirror)
    except PyreproError as exc:
        # recorded, so the report shows the failure instead of an older success; then re-raised
        _write_record(paths, spec.name, run_dir, _failure_record(spec, bench, test, stamp, data_kind, stage, exc))
        progress.finish(label, f"{stage} failed")
        raise
    script = patches.entry_script(spec.entry)
    prog = b.env_dir / "bin" / spec.entry[0]
    # Everything after the script in the entry command is kept (ipython needs '--' before the
    # script's own flags: ["ipython", "run.py", "--"]).
    after = list(spec.entry[spec.entry.index(script) + 1:])
    cmd = [str(prog), str(b.src_dir / script), *after, "--benchmark", bench, "--benchmarks-dir", str(ds.benchmarks_dir),
           "--data-dir", str(ds.data_dir), "--output-dir", str(out)]
    if test:
        cmd += list(spec.test.args)
    base = {
        "PATH": f"{b.env_dir / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work / "home"), "XDG_CACHE_HOME": str(work / "home" / ".cache"),
        "MPLCONFIGDIR": str(work / "home" / ".mpl"), "MPLBACKEND": "Agg",
        "PYTHONPATH": str(b.runtime_dir), "PYTHONNOUSERSITE": "1", "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",  # the environment and source stay as verified
        "PYREPRO_BENCHMARKS_DIR": str(ds.benchmarks_dir), "PYREPRO_DATA_DIR": str(ds.data_dir),
        "PYREPRO_DATA_KIND": ds.kind, "TMPDIR": str(work),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(os.cpu_count() or 1)),
        "TF_CPP_MIN_LOG_LEVEL": "1",
        # seeds set at run time, by the script or by a library from its config defaults
        # (pyrepro/runtime: random, numpy, torch, tensorflow, ... seed calls, with their caller)
        "PYREPRO_SEEDS_FILE": str(logs / "seeds.jsonl"),
    }
    private = run_dir / "gpu-driver"
    if decision.use_gpu and discovery.driver is not None:
        gpu.expose(discovery.driver, private)
    env = gpu.runtime_env(base, decision, discovery.driver, private if decision.use_gpu else None)
    if box.active:
        mounts = sandbox.for_environment(b.env_dir).plus(
            read_only=[b.src_dir.parent, ds.benchmarks_dir, ds.data_dir,
                       *([private, Path(discovery.driver.lib_dir)] if decision.use_gpu and discovery.driver else [])],
            writable=[work, out, logs])
        if decision.use_gpu:
            mounts = sandbox.Mounts(mounts.read_only, mounts.writable, gpu.device_nodes(), mounts.network)
        argv, protection = box.wrap(cmd, mounts, cwd=work), "read-only in the sandbox (bubblewrap)"
    else:
        prefix, protection = readonly_prefix(b.src_dir.parent, runner)
        argv = [*prefix, *cmd]
    t0 = time.monotonic()
    exit_code: int | None = None
    error = None
    with open(logs / "stdout.log", "w") as so, open(logs / "stderr.log", "w") as se:
        try:
            done = runner(argv, cwd=work, env=env, check=False, timeout=timeout, stdout_file=so,
                          stderr_file=se, on_line=output_detail(progress, label))
            exit_code = done.returncode
        except PyreproError as exc:
            error = str(exc)
    seconds = time.monotonic() - t0
    progress.advance(label, 1, f"exit {exit_code}")
    outputs = {p.name: _sha_file(p) for p in sorted(out.iterdir()) if p.is_file()}
    expected = out / (_predictions_name(bench) + ".csv.zip")
    pred = next((p for p in spec.predictions if p.benchmark == bench), None)
    targets = verdict.read_targets(ds.benchmarks_dir / f"{bench}.json.zip", bench)
    submitted = b.src_dir / pred.file if pred is not None else None
    pristine = None
    comparable, why = (pred.comparable, pred.note) if pred else (False, "")
    if pred is not None and ds.kind == "jarvis":
        m = paths.mirror(mirror)
        pristine = sources.obtain_source(spec.source, mirror=m, cache=paths.cache).path
        submitted = pristine / pred.file
        comparable, why = verdict.comparability(reviewed=pred.comparable, note=pred.note,
                                                digest=verdict.predictions_digest(submitted),
                                                others=_submitted_digests(paths, spec, bench, m))
    v = verdict.judge(benchmark=bench, exit_code=exit_code, output=expected if expected.exists() else None,
                      data_kind=ds.kind, targets=targets, submitted=submitted,
                      reported_mae=pred.reported_mae if pred else None,
                      comparable=comparable, note=why, test=test)
    series = patches.load_series(paths.patch_dir(spec.name))
    lock_path = spec.dir / "pdm.lock"
    record = {
        "schema": 1,
        "pyrepro": pyrepro_identity(paths),
        "model": spec.name, "benchmark": bench, "test": test,
        "started": stamp, "seconds": round(seconds, 2), "exit_code": exit_code, "error": error,
        "command": [c.replace(str(paths.cache), "$PYREPRO_CACHE") for c in cmd],
        "source": {"repository": spec.source.repository, "commit": spec.source.commit,
                   "subdir": spec.source.subdir, "tree": spec.source.tree},
        "lock": {"file": "models/" + spec.name + "/pdm.lock", "sha256": _sha_file(lock_path)},
        "patches": [{"file": p.path.name, "category": p.category, "sha256": p.sha256} for p in series],
        "verified": [c.to_json() for c in checked],
        "environment": {"backend": b.backend, "env_key": b.env_key, "src_key": b.src_key, "python": b.python,
                        "platform": local_backend.host_platform(), "cpu": _cpu(), "cpus": os.cpu_count()},
        "gpu": {"need": spec.gpu, "requested": use_gpu, "used": decision.use_gpu, "message": decision.message,
                "driver": discovery.driver.version if discovery.driver else None},
        "data": {"kind": ds.kind, "digest": ds.digest,
                 "note": "fixture data proves executability, never a numerical result" if ds.kind == "fixture" else ""},
        "source_protection": protection,
        "sandbox": box.to_json(),
        "seeds": static_seeds(b.src_dir / script),
        "seeds_observed": observed_seeds(logs / "seeds.jsonl", {str(work): "", str(b.env_dir): "<env>",
                                                               str(b.src_dir): ""}),
        "outputs": outputs,
        "predictions": _predictions_digest(expected),
        "logs": {"stdout": "logs/stdout.log", "stderr": "logs/stderr.log",
                 "stderr_tail": _tail(logs / "stderr.log")},
        "verdict": v.to_json(),
    }
    _write_record(paths, spec.name, run_dir, record)
    progress.finish(label, v.tier)
    return RunRecord(spec.name, bench, test, run_dir / "record.json", record, v, error)


def _atomic_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def _write_record(paths: Paths, name: str, run_dir: Path, record: dict[str, Any]) -> None:
    _atomic_json(run_dir / "record.json", record)
    _atomic_json(paths.cache / "runs" / name / "latest.json", record)


def _failure_record(spec: ModelSpec, bench: str, test: bool, stamp: str, data_kind: str, stage: str,
                    exc: PyreproError) -> dict[str, Any]:
    """The record of a run that never started: the build or the data preparation failed."""
    lock_path = spec.dir / "pdm.lock"
    msg = f"{stage} failed: {exc}"
    return {
        "schema": 1, "model": spec.name, "benchmark": bench, "test": test, "started": stamp, "seconds": None,
        "exit_code": None, "error": msg, "stage": stage,
        "source": {"repository": spec.source.repository, "commit": spec.source.commit,
                   "subdir": spec.source.subdir, "tree": spec.source.tree},
        "lock": {"file": f"models/{spec.name}/pdm.lock",
                 "sha256": _sha_file(lock_path) if lock_path.is_file() else None},
        "data": {"kind": data_kind, "digest": None},
        "outputs": {},
        "verdict": {"tier": "failed", "reason": f"the {stage} failed before the run (see error)", "benchmark": bench},
    }


def _predictions_name(benchmark: str) -> str:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_pyrepro_runtime", local_backend.RUNTIME_DIR / "pyrepro_runtime.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(mod.predictions_name(benchmark))


def _tail(p: Path, n: int = 15) -> str:
    try:
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def select(registry: Registry, target: str, *, only: Sequence[str] = (), exclude: Sequence[str] = ()) -> tuple[str, list[ModelSpec]]:
    """A model name or a benchmark (alias) -> (benchmark or '', models)."""
    bench = resolve_benchmark(target)
    specs = registry.for_benchmark(bench)
    if not specs:
        return "", [registry.get(target)]
    if only:
        names = {registry.get(n).name for n in only}
        specs = [s for s in specs if s.name in names]
    if exclude:
        names = {registry.get(n).name for n in exclude}
        specs = [s for s in specs if s.name not in names]
    if not specs:
        raise NotFoundError(f"no model left to run for {bench} after --only/--exclude")
    return bench, specs


def run_many(specs: Sequence[ModelSpec], paths: Paths, *, benchmark: str | None, **kw: Any) -> list[RunRecord]:
    """Run each model in turn; a failure (build or run) is recorded and the next model runs."""
    out = []
    for s in specs:
        try:
            out.append(run_model(s, paths, benchmark=benchmark or None, **kw))
        except PyreproError as exc:
            out.append(RunRecord(s.name, benchmark or s.default_benchmark, bool(kw.get("test")), Path(),
                                 {"model": s.name, "error": str(exc), "hint": exc.hint}, None, str(exc), cause=exc))
        except Exception as exc:  # a bug met by one model must not stop the others; it is reported as one
            msg = f"internal error ({type(exc).__name__}: {exc}); please report it"
            out.append(RunRecord(s.name, benchmark or s.default_benchmark, bool(kw.get("test")), Path(),
                                 {"model": s.name, "error": msg}, None, msg))
    return out


_IMPORT_PROBE = r"""
import importlib, json, os, re, sys, sysconfig
try:
    from importlib.util import find_spec

    def origin_of(mod):
        found = find_spec(mod)
        return None if found is None else (found.origin or "")
except ImportError:  # Python 2 (a Python 2 submission's environment): imp finds modules
    import imp

    def origin_of(mod):
        try:
            handle, path, _desc = imp.find_module(mod)
        except ImportError:
            return None
        if handle:
            handle.close()
        return path or ""
stdlib = sysconfig.get_paths()["stdlib"]
req = json.loads(sys.argv[1])
wanted = list(req.get("modules", []))
if req.get("distributions"):
    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
    dists = {norm(d) for d in req["distributions"]}
    # pyrepro.toplevel's source precedes this script (the one computation of top-level modules;
    # no importlib.metadata, which 3.6 and 3.7 lack)
    for dist_name, tops in installed_distributions(sys.path):
        if norm(dist_name) not in dists:
            continue
        for mod in sorted(tops):
            # top_level.txt may name extension leftovers that are no module (xgboost 1.7: libxgboost):
            # metadata-derived names are imported only when they exist; scanned names always are.
            # A name that is a standard-library module (pyxtal ships a top-level 'test') would
            # import the stdlib's, proving nothing: skipped too.
            if mod.startswith("_") or not re.match(r"^[A-Za-z_]\w*$", mod) or mod in wanted \
                    or mod in getattr(sys, "stdlib_module_names", ()):
                continue
            origin = origin_of(mod)
            if origin is None or (origin.startswith(stdlib) and "site-packages" not in origin):
                continue
            wanted.append(mod)
res = []
for mod, folder in req.get("folders", {}).items():
    for base in list(sys.path):
        if base and os.path.isdir(os.path.join(base, folder)):
            sys.path.append(os.path.join(base, folder))
            break
for mod in wanted:
    try:
        importlib.import_module(mod)
        res.append([mod, "ok", ""])
    except BaseException as exc:
        res.append([mod, "error", (type(exc).__name__ + ": " + str(exc))[:300]])
# after a newline of its own and flushed: a C extension's own stdout buffer (pybullet's "pybullet
# build time" line) is written at the interpreter's exit, after this line
sys.stdout.write("\n" + __PROBE_MARK__ + json.dumps(res) + "\n")
sys.stdout.flush()
"""


PROBE_MARK = "PYREPRO-IMPORTS "


def _import_probe() -> str:
    """The import check's script: ``pyrepro.toplevel`` (run in the model's own interpreter), then
    the probe."""
    import inspect

    from pyrepro import toplevel

    probe = _IMPORT_PROBE.replace("__PROBE_MARK__", repr(PROBE_MARK))
    return inspect.getsource(toplevel) + "\n" + probe


def probe_result(stdout: str) -> str:
    """The import probe's JSON: its last line that starts with ``PROBE_MARK`` (installed code may
    print before it, and a C extension's buffered output after it: ravens, corpus15 held, whose
    pybullet's build-time line came after the result and made the check say the interpreter died
    with exit 0). Raises ValueError when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARK):
            return line[len(PROBE_MARK):]
    raise ValueError("no import probe result in the output")


def module_owners(built: BuiltModel, modules: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Top-level module -> the installed distributions (canonical names, sorted) that ship it, for
    each of ``modules`` (dotted names count by their top level) that two or more distributions of
    the model's environment ship: files of one overwrote the other's (Theano and Theano-PyMC both
    ship ``theano``: rt-covid, corpus13 dev). Read from the environment's ``*.dist-info`` folders."""
    from packaging.utils import canonicalize_name

    from pyrepro.toplevel import installed_distributions

    tops = {m.split(".")[0] for m in modules}
    if not tops:
        return {}
    entries = [str(p) for p in sorted(built.env_dir.glob("lib/python*/site-packages"))]
    owners: dict[str, set[str]] = {}
    for name, shipped in installed_distributions(entries):
        for t in tops & set(shipped):
            owners.setdefault(t, set()).add(canonicalize_name(name))
    return {t: tuple(sorted(d)) for t, d in owners.items() if len(d) > 1}


def model_distributions(spec: ModelSpec) -> list[str]:
    """The distributions the model's code uses (scanned + extra - removed), by canonical name."""
    from packaging.requirements import Requirement

    from pyrepro.generate import dependencies

    return sorted({Requirement(r).name for r in dependencies(spec)})


def scanned_modules(spec: ModelSpec, built: BuiltModel) -> list[str]:
    """The third-party modules the (patched, staged) source imports unconditionally, per the scanner.

    Modules of distributions the registry removes after review (``dependencies.remove``) are left out,
    and so are modules no distribution provides that only files in a folder of obsolete code import
    (``resolve.obsolete_folder``; ``unchecked_modules`` says which).
    """
    return _import_plan(spec, built)[0]


def unchecked_modules(spec: ModelSpec, built: BuiltModel) -> list[str]:
    """A sentence for each module ``scanned_modules`` leaves out as obsolete code's."""
    return _import_plan(spec, built)[1]


def branch_only_modules(spec: ModelSpec, built: BuiltModel, failing: Iterable[str] = ()) -> dict[str, str]:
    """Checked module -> where it is imported, for each module every one of whose required imports
    sits under a run-time ``if`` ("train.py:45 (under `args.use_apex`)"): the code runs without it
    when that branch is not taken (``scan.ImportRecord.branch``). For the modules of ``failing``,
    also one imported only inside module-level functions that nothing in the folder refers to
    (``uncalled``)."""
    plan = _import_plan(spec, built)
    out = dict(plan[2])
    for mod in failing:
        if mod not in out and plan[3].get(mod):
            where = uncalled(built.src_dir, plan[3][mod]) or guarded_elsewhere(built.src_dir, mod, plan[3][mod])
            if where:
                out[mod] = where
    return out


def _parsed(root: Path, locations: Sequence[Any]) -> dict[str, Any] | None:
    """The parsed .py file of each of ``locations`` (``scan.Location``), by path; None when one is
    a notebook cell, has no line, or sits in a file that does not parse."""
    import ast

    trees: dict[str, Any] = {}
    for loc in locations:
        if getattr(loc, "cell", None) is not None or not getattr(loc, "line", None) or not str(loc.path).endswith(".py"):
            return None
        if loc.path not in trees:
            try:
                trees[loc.path] = ast.parse((root / loc.path).read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                return None
    return trees


def guarded_elsewhere(root: Path, module: str, locations: Sequence[Any]) -> str | None:
    """Where a module is imported, when the code probes it under ``try: ... except ImportError`` at
    one of ``locations`` and every other one sits inside a function (scbert-cell-annotation, corpus19
    dev: performer_pytorch's ``causal_linear_attention()`` imports fast_transformers, and the class
    that uses that function chooses it only when ``import fast_transformers...`` inside a
    ``try``/``except ImportError`` succeeded, else a version without it): the authors made it
    optional, and the function's import is its deferred use. "performer_pytorch.py:157 (in
    causal_linear_attention(); performer_pytorch.py:224 tries it under except ImportError)". None
    otherwise: no guarded probe, an import at module level or in a notebook cell, or a file that
    does not parse."""
    import ast

    from pyrepro.scan.python import IMPORT_ERRORS

    top = module.split(".")[0]

    def names_it(node: Any) -> bool:
        if isinstance(node, ast.Import):
            return any(a.name.split(".")[0] == top for a in node.names)
        return isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == top

    def catches(handler: Any) -> bool:
        t = handler.type
        kinds = t.elts if isinstance(t, ast.Tuple) else [t] if t is not None else []
        return any(isinstance(k, ast.Name) and k.id in IMPORT_ERRORS for k in kinds)

    trees = _parsed(root, locations)
    if trees is None:
        return None
    guarded: list[Any] = []
    inside: list[tuple[str, Any]] = []
    for loc in locations:
        tree = trees[loc.path]
        probed = any(isinstance(n, ast.Try) and any(catches(h) for h in n.handlers)
                     and any(names_it(m) and m.lineno == loc.line for b in n.body for m in ast.walk(b))
                     for n in ast.walk(tree))
        if probed:
            guarded.append(loc)
            continue
        fn = min((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.lineno < loc.line <= (n.end_lineno or n.lineno)),
                 key=lambda n: (n.end_lineno or n.lineno) - n.lineno, default=None)
        if fn is None:
            return None
        inside.append((fn.name, loc))
    if not guarded or not inside:
        return None
    name, loc = inside[0]
    return f"{loc} (in {name}(); {guarded[0]} tries it under except ImportError)"


# where a function may be referred to: code, notebooks, scripts, configuration and documentation
_REFERENCE_SUFFIXES = (".py", ".ipynb", ".sh", ".cfg", ".toml", ".txt", ".yml", ".yaml", ".json", ".md", ".rst")


def uncalled(root: Path, locations: Sequence[Any]) -> str | None:
    """Where a module is imported, when every one of ``locations`` (``scan.Location``) sits inside
    a module-level, undecorated function of a .py file whose name nothing else in the folder
    mentions (no call, no reference, in no code or configuration file): "FARZ.py:269 (in props(),
    which nothing in the folder refers to)". Dead code from the submission's point of view
    (seirs-network-epidemic, corpus15 held: ``import plotNets`` inside FARZ.py's demo ``props()``).
    None otherwise: a notebook cell, a method, a decorated function (a framework calls it), a file
    that does not parse, or a name mentioned anywhere but its own ``def``."""
    import ast
    import re

    funcs: list[tuple[str, Any]] = []
    trees = _parsed(root, locations)
    if trees is None:
        return None
    for loc in locations:
        fn = next((n for n in trees[loc.path].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.lineno <= loc.line <= (n.end_lineno or n.lineno)), None)
        if fn is None or fn.decorator_list:
            return None
        funcs.append((fn.name, loc))
    if not funcs:
        return None
    texts: list[str] = []
    for p in sorted(root.rglob("*")):
        if p.suffix in _REFERENCE_SUFFIXES and p.is_file() and ".git" not in p.parts:
            try:
                if p.stat().st_size <= 4 << 20:
                    texts.append(p.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
    for name in {n for n, _loc in funcs}:
        mentioned = sum(len(re.findall(rf"\b{re.escape(name)}\b", t)) for t in texts)
        defined = sum(len(re.findall(rf"\bdef\s+{re.escape(name)}\b", t)) for t in texts)
        if mentioned > defined:
            return None
    name, loc = funcs[0]
    return f"{loc} (in {name}(), which nothing in the folder refers to)"


#: the last plan, keyed by what it was computed from: the import stage asks for the modules and
#: then for what was left out, of one staged source (content-addressed), and is answered by one scan
_LAST_PLAN: list[tuple[tuple[str, ...], tuple[list[str], list[str], dict[str, str], dict[str, tuple[Any, ...]]]]] = []


def _import_plan(spec: ModelSpec, built: BuiltModel) -> tuple[list[str], list[str], dict[str, str],
                                                              dict[str, tuple[Any, ...]]]:
    key = (built.src_key, str(built.src_dir), str(built.runtime_dir), spec.python, repr(spec.module_mapping),
           repr(spec.dependencies.remove))
    if _LAST_PLAN and _LAST_PLAN[0][0] == key:
        return _LAST_PLAN[0][1]
    plan = _scan_plan(spec, built)
    _LAST_PLAN[:] = [(key, plan)]
    return plan


def _scan_plan(spec: ModelSpec, built: BuiltModel) -> tuple[list[str], list[str], dict[str, str],
                                                            dict[str, tuple[Any, ...]]]:
    try:
        from pyrepro.scan import scan_path
    except ImportError:  # the scanner is optional here: the distributions' modules still get imported
        return [], [], {}, {}
    try:
        res = scan_path(built.src_dir, python=spec.python, mapping=spec.module_mapping)
    except Exception:  # a scan failure must not hide the import check; distributions are still checked
        return [], [], {}, {}
    from packaging.utils import canonicalize_name

    runtime = {p.stem for p in built.runtime_dir.iterdir()} if built.runtime_dir.is_dir() else set()
    # distributions removed by review (model.toml dependencies.remove) belong to scripts the run never uses
    removed = {canonicalize_name(d) for d in spec.dependencies.remove}
    # a guessed name (no mapping knows the module) is still checked: the build decides whether it
    # imports; so is an import no distribution provides (resolved_with "unresolved": a git-only
    # project), which then fails the check with its name instead of passing unseen
    from pyrepro.resolve import obsolete_folder

    out: set[str] = set()
    left_out: list[str] = []
    branches: dict[str, str] = {}
    where: dict[str, tuple[Any, ...]] = {}
    for r in res.imports:
        dist = r.distribution or r.guess or (r.module if r.resolved_with == "unresolved" else None)
        if not dist or r.optional or r.module in runtime or canonicalize_name(dist) in removed:
            continue
        why = [obsolete_folder(loc.path) for loc in r.locations]
        if r.distribution is None and r.locations and all(why):  # unresolved, or a guessed name only
            left_out.append(f"{r.module} (imported only in {r.locations[0].path}, in {why[0]}; no distribution "
                            f"provides it)")
            continue
        out.add(r.module)
        where[r.module] = tuple(r.locations)
        if r.branch:
            branches[r.module] = r.branch
    return sorted(out), left_out, branches, where


def verify_built(spec: ModelSpec, built: BuiltModel) -> list[Any]:
    """The staged source and the environment against what was recorded when they were made
    (``pyrepro.verify``); ``IntegrityError`` names the first difference and how to rebuild."""
    from pyrepro import verify

    hint = f"rebuild: pyrepro build {spec.name} (it replaces a cached tree that fails this check)"
    return [verify.verify_tree(built.src_dir.parent, rebuild_hint=f"the staged source was modified; {hint}"),
            verify.verify_env(built.env_dir, rebuild_hint=f"the environment was modified; {hint}")]


def check_imports(spec: ModelSpec, built: BuiltModel, *, modules: Sequence[str] = (),
                  runner: Runner = proc.run) -> list[tuple[str, str, str]]:
    """Import each module inside the built environment; (module, ok|error, message).

    Without ``modules``: every third-party module the staged source imports unconditionally
    (``scan_path``), then every top-level module of the model's distributions.
    """
    # nothing of the environment runs before it is verified (a planted .pth or module would)
    verify_built(spec, built)
    box = sandbox.choose()
    env = {"PATH": f"{built.env_dir / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(built.runtime_dir),
           "MPLBACKEND": "Agg", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    mounts = sandbox.for_environment(built.env_dir).plus(read_only=[built.runtime_dir])
    req: dict[str, Any] = ({"modules": list(modules)} if modules else
                           {"modules": scanned_modules(spec, built), "distributions": model_distributions(spec)})
    from pyrepro.resolve import inside_folder

    # a module a distribution ships in a folder the code puts on sys.path (RDKit's Contrib/SA_Score)
    req["folders"] = {m: f for m in req["modules"] if (f := inside_folder(m))}
    # in an empty folder of its own: ``python -c`` puts the working directory first on sys.path, so
    # the caller's folder would lend its own modules (a checkout's models/ answered LocalRetro's
    # missing 'models'), and an import that writes a file (automatminer's log) would write there
    def probe(request: dict[str, Any]) -> tuple[list[tuple[str, str, str]] | None, Any]:
        with tempfile.TemporaryDirectory(prefix="pyrepro-imports-") as work:
            argv = [str(built.env_dir / "bin" / "python"), "-c", _import_probe(), json.dumps(request)]
            home = Path(work) / "home"
            home.mkdir()
            done = runner(box.wrap(argv, mounts.plus(writable=[Path(work)]), cwd=Path(work)),
                          env={**env, "HOME": str(home), "TMPDIR": str(work)}, check=False, timeout=1800,
                          cwd=Path(work))
        try:
            return [(r[0], r[1], r[2]) for r in json.loads(probe_result(done.stdout))], done
        except (ValueError, IndexError, TypeError):
            return None, done

    rows, done = probe(req)
    if rows is not None:
        return rows
    if not req["modules"] or (len(req["modules"]) == 1 and req.get("distributions")):
        return [("*", "error", f"import probe failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")]
    if len(req["modules"]) == 1:
        return [(req["modules"][0], "error", f"the interpreter died importing it (exit {done.returncode}): "
                                             f"{done.stderr.strip()[-240:]}")]
    # the interpreter itself died (exit -6: tensorflow and torch of rosettafold, corpus8 dev, abort
    # when imported into one process): each module in a process of its own, so the one that
    # kills it is named and the others are still checked (the model's scripts import them apart)
    together = f"imported alone: all together, the interpreter died (exit {done.returncode})"
    out: list[tuple[str, str, str]] = []
    for mod in req["modules"]:
        one, alone = probe({"modules": [mod], "folders": {k: v for k, v in req["folders"].items() if k == mod}})
        out += [(m, st, msg or together) for m, st, msg in one] if one is not None else [
            (mod, "error", f"the interpreter died importing it (exit {alone.returncode}): "
                           f"{alone.stderr.strip()[-240:]}")]
    return out
