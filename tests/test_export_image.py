"""The exported image of cfid, unpacked into an empty root and run there (issue 46, item 4).

The container runtime of these machines does not start containers (podman's crun refuses the
hybrid cgroup layout), so the image is checked as a runtime would start it, without one: its
layers are applied in order into a fresh folder (``pyrepro.oci.unpack``, whiteouts honoured,
every blob and layer checked against its digest), and that folder is the whole root of a
bubblewrap sandbox (no network, no host folder but the fixture data and an output folder):
the loader lists what every ELF file of the image needs and finds it inside, the import check
(the same probe as ``pyrepro check-imports``) passes, and the image's entry point runs the
model's ``--test`` on fixture data and writes predictions for every test id. Where podman is
installed, ``podman load`` takes the archive as the same image (its id is the config digest).

Integration: builds cfid's environment from PyPI (about 30 locked packages) and needs
../shared/upstream (the pinned source); it skips cleanly without it or without bubblewrap.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyrepro import data, export, oci, run, sandbox, verdict
from pyrepro.backends import BuiltModel
from pyrepro.registry import ModelSpec, load_registry
from tests.conftest import UPSTREAM, UPSTREAM_LB

REPO = Path(__file__).resolve().parent.parent
BENCH = "dft_3d_exfoliation_energy"


@dataclass(frozen=True)
class Exported:
    spec: ModelSpec
    built: BuiltModel
    archive: Path
    root: Path  # the archive's layers applied into an empty folder
    config: dict
    result: dict  # the --json result of `pyrepro export`
    cache: Path
    host_prefix: Path  # the interpreter installation the environment was made from, on this machine


def _bwrap() -> str:
    program = shutil.which("bwrap")
    if program is None:
        pytest.skip("bubblewrap is not installed")
    probe = subprocess.run([program, "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot create its namespaces here: {probe.stderr.decode()[-200:]}")
    return program


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    if not UPSTREAM_LB.is_dir():
        pytest.skip("../shared/upstream is not present on this machine")
    _bwrap()
    from pyrepro.backends import local
    from pyrepro.cli import main
    from pyrepro.paths import Paths

    tmp = tmp_path_factory.mktemp("export")
    cache = tmp / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYREPRO_CACHE", str(cache))
        mp.setenv("PYREPRO_ROOT", str(REPO))
        mp.delenv("PYREPRO_SANDBOX", raising=False)
        archive = tmp / "cfid.oci.tar"
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["export", "cfid", "--mirror", str(UPSTREAM), "--out", str(archive), "--json"])
        envelope = json.loads(out.getvalue())
        assert code == 0, envelope
        spec = load_registry(REPO / "models").get("cfid")
        built = local.build(spec, Paths.discover(), mirror=UPSTREAM)  # a cache hit: what was exported
        assert built.env_cached and built.src_cached
    root = tmp / "root"
    oci.unpack(archive, root)
    [host_prefix] = sandbox.interpreter_paths(built.env_dir)
    yield Exported(spec, built, archive, root, oci.read_archive(archive).config, envelope["result"], cache,
                   host_prefix)


def _in_root(root: Path, argv: list[str], env: dict[str, str], *, ro: dict[Path, str] | None = None,
             rw: dict[Path, str] | None = None, cwd: str = "/", timeout: float = 600) -> subprocess.CompletedProcess:
    """``argv`` with ``root`` as the whole file system (read-only), a private /tmp and /work, no
    network, no host folder but ``ro``/``rw`` (host folder -> path inside), environment ``env`` only."""
    cmd = [_bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
           "--ro-bind", str(root), "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/work"]
    for host, inside in (ro or {}).items():
        cmd += ["--ro-bind", str(host), inside]
    for host, inside in (rw or {}).items():
        cmd += ["--bind", str(host), inside]
    cmd += ["--chdir", cwd, "--", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def _image_env(config: dict) -> dict[str, str]:
    return dict(e.split("=", 1) for e in config["config"]["Env"])


@pytest.mark.integration
@pytest.mark.upstream
def test_export_cfid__record_labels_and_relocated_environment(exported: Exported, upstream: Path) -> None:
    spec, built, root, cfg = exported.spec, exported.built, exported.root, exported.config
    lock_sha = hashlib.sha256((REPO / "models" / "cfid" / "pdm.lock").read_bytes()).hexdigest()
    record = json.loads((root / "pyrepro" / "record.json").read_text())
    assert record["model"] == "cfid" and record["lock"]["sha256"] == lock_sha
    assert record["source"] == {"repository": spec.source.repository, "commit": spec.source.commit,
                                "subdir": spec.source.subdir, "tree": spec.source.tree}
    assert record["environment"]["env_key"] == built.env_key and record["environment"]["python"] == built.python
    assert [p["file"] for p in record["patches"]] == sorted(p.name for p in (REPO / "patches" / "cfid").glob("*.patch"))
    assert record["pyrepro"]["version"]
    assert record["libraries"]["missing"] == []
    assert {lib["name"] for lib in record["libraries"]["copied"]} >= {"libc.so.6", "libm.so.6", "libgomp.so.1",
                                                                       "ld-linux-x86-64.so.2"}
    labels = cfg["config"]["Labels"]
    assert labels["io.pyrepro.lock.sha256"] == lock_sha and labels["io.pyrepro.env-key"] == built.env_key
    assert labels["org.opencontainers.image.revision"] == spec.source.commit
    assert labels["io.pyrepro.record"] == "/pyrepro/record.json"
    assert cfg["config"]["Entrypoint"] == export.entrypoint(spec) == exported.result["entrypoint"]
    assert cfg["config"]["Entrypoint"][:2] == ["/opt/venv/bin/python", "/opt/model/src/run.py"]
    env = _image_env(cfg)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONPATH"] == "/opt/model/runtime"
    assert env["PATH"].startswith("/opt/venv/bin:")
    # the environment is relocated into the image
    assert "home = /opt/python/bin\n" in (root / "opt/venv/pyvenv.cfg").read_text()
    assert os.readlink(root / "opt/venv/bin/python") == "/opt/python/bin/python"
    for script in ("tqdm", "f2py"):
        assert (root / "opt/venv/bin" / script).read_text().startswith("#!/opt/venv/bin/python\n")
    # the verified bytes: every file of the model's source equals the staged one
    staged = built.src_dir
    for p in staged.rglob("*"):
        if p.is_file():
            assert (root / "opt/model/src" / p.relative_to(staged)).read_bytes() == p.read_bytes()
    # no host path is left in any script, configuration or text file; what is left is in compiled
    # files only: ELF files of the interpreter (its build prefix, compiled in; a run path that does
    # not exist in the image) and bytecode (source file names, replaced at import by the interpreter)
    host = [str(exported.host_prefix).encode(), str(built.env_dir).encode(), str(exported.cache).encode()]
    left = []
    for d, _dirs, files in os.walk(root):
        for n in files:
            p = Path(d) / n
            if p.is_symlink():
                assert not any(os.readlink(p).encode().startswith(h) for h in host), p
                continue
            if n.endswith((".pyc", ".a")):
                continue
            body = p.read_bytes()
            if body[:4] != b"\x7fELF" and any(h in body for h in host):
                left.append(str(p.relative_to(root)))
    assert left == []


@pytest.mark.integration
@pytest.mark.upstream
def test_export_cfid__unpacked_root__host_hidden_network_off_libraries_inside(exported: Exported,
                                                                               upstream: Path) -> None:
    root, env = exported.root, _image_env(exported.config)
    hidden = [str(exported.host_prefix), str(exported.built.env_dir), str(exported.cache), str(REPO),
              str(Path.home())]
    probe = ("import json, os, sys; print(json.dumps({'seen': [p for p in json.loads(sys.argv[1]) if "
             "os.path.exists(p)], 'prefix': sys.prefix, 'base': sys.base_prefix, 'exe': sys.executable, "
             "'path': sys.path, 'top': sorted(os.listdir('/')), 'net': open('/proc/net/dev').read()}))")
    done = _in_root(root, ["/opt/venv/bin/python", "-c", probe, json.dumps(hidden)], env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["seen"] == []  # the interpreter's installation on this machine among them
    assert (got["prefix"], got["base"], got["exe"]) == ("/opt/venv", "/opt/python", "/opt/venv/bin/python")
    assert all(p.startswith(("/opt/python/", "/opt/venv/", "/opt/model/")) for p in got["path"] if p), got["path"]
    assert got["top"] == sorted(p.name for p in root.iterdir())
    ifaces = [ln.split(":")[0].strip() for ln in got["net"].splitlines()[2:]]
    assert ifaces == ["lo"]  # network off: a namespace of its own with only loopback
    # the image's own loader resolves every ELF file of the image inside it; a library it does
    # not find is one the wheel ships beside its dependent, which finds it through its run path
    elves = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink() and not p.name.endswith((".py", ".pyc")):
            with open(p, "rb") as f:
                head = f.read(18)
            if head[:4] == b"\x7fELF" and head[16] in (2, 3):  # executables and shared objects (not python.o)
                elves.append(p)
    assert len(elves) > 100
    loader = "/lib64/ld-linux-x86-64.so.2"
    script = f'for f in "$@"; do echo "== $f"; {loader} --list "$f" 2>&1 || echo "EXIT $?"; done'
    listing = _in_root(root, ["/bin/sh", "-c", script, "sh", *["/" + str(p.relative_to(root)) for p in elves]], env)
    assert listing.returncode == 0, listing.stderr
    problems, resolved = [], set()
    current, unfound, failed = "", [], False

    def judge() -> None:
        # a library the loader does not find alone must sit beside the file that needs it (a
        # wheel's .libs folder: found through the dependent's run path when Python loads it)
        for name in unfound:
            if not (root / current.lstrip("/")).parent.joinpath(name).exists():
                problems.append(f"{current}: {name} not found")
        if failed and not unfound:
            problems.append(f"{current}: the loader failed")

    for line in [*listing.stdout.splitlines(), "== end"]:
        if line.startswith("== "):
            if current:
                judge()
            current, unfound, failed = line[3:], [], False
        elif "=> not found" in line:
            unfound.append(line.split("=>")[0].strip())
        elif "cannot open shared object file" in line:
            unfound.append(line.split(": ")[-3].strip())
        elif line.startswith("EXIT "):
            failed = True
        elif "=>" in line:
            resolved.add(line.split("=>")[1].split("(")[0].strip())
    assert problems == []
    assert resolved and all(p.startswith(("/lib/", "/usr/lib/", "/opt/")) for p in resolved), resolved


@pytest.mark.integration
@pytest.mark.upstream
def test_export_cfid__unpacked_root__import_check_and_test_run_pass(exported: Exported, upstream: Path,
                                                                      tmp_path: Path) -> None:
    spec, built, root, cfg = exported.spec, exported.built, exported.root, exported.config
    env = _image_env(cfg)
    from pyrepro.resolve import inside_folder

    # the import check, as `pyrepro check-imports` makes it, with the image's interpreter
    modules = run.scanned_modules(spec, built)
    req = {"modules": modules, "distributions": run.model_distributions(spec),
           "folders": {m: f for m in modules if (f := inside_folder(m))}}
    done = _in_root(root, ["/opt/venv/bin/python", "-c", run._import_probe(), json.dumps(req)], env, cwd="/work")
    assert done.returncode == 0, done.stderr
    rows = json.loads(run.probe_result(done.stdout))
    assert [r for r in rows if r[1] != "ok"] == []
    assert {"jarvis", "lightgbm", "numpy", "pandas", "sklearn", "tqdm"} <= {r[0] for r in rows}
    # the test run: the image's entry point with the model's test flags, on fixture data
    fx = data.write_fixture(tmp_path / "fixture")
    out = tmp_path / "out"
    out.mkdir()
    argv = cfg["config"]["Entrypoint"] + cfg["config"]["Cmd"] + list(spec.test.args)
    done = _in_root(root, argv, {**env, "PYREPRO_DATA_KIND": "fixture"},
                    ro={fx.benchmarks_dir: "/data/benchmarks", fx.data_dir: "/data/datasets"},
                    rw={out: "/out"}, cwd=cfg["config"]["WorkingDir"])
    assert done.returncode == 0, done.stderr[-3000:]
    [pred] = list(out.glob("*.csv.zip"))
    targets = verdict.read_targets(fx.benchmarks_dir / f"{BENCH}.json.zip", BENCH)
    v = verdict.judge(benchmark=BENCH, exit_code=done.returncode, output=pred, data_kind="fixture",
                      targets=targets, test=True)
    assert v.tier == "executable" and v.n_predictions == len(targets) > 0, v
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fixture", "out"]  # nothing else written on the host


@pytest.mark.integration
@pytest.mark.upstream
def test_export_cfid__podman_load__same_image(exported: Exported, upstream: Path, tmp_path: Path) -> None:
    """podman installs here but its runtime does not start containers: loading is what is checked."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed")
    import tempfile

    run_root = Path(tempfile.mkdtemp(prefix="pyrepro-pm-"))  # podman wants a run root under 50 characters
    store = ["podman", "--root", str(tmp_path / "root"), "--runroot", str(run_root), "--storage-driver", "vfs"]
    try:
        _podman_load(exported, store)
    finally:
        subprocess.run([*store, "rmi", "-af"], capture_output=True, timeout=300)
        shutil.rmtree(run_root, ignore_errors=True)


def _podman_load(exported: Exported, store: list[str]) -> None:
    done = subprocess.run([*store, "load", "-i", str(exported.archive)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    ref = exported.result["reference"]
    assert f"Loaded image: localhost/{ref}" in done.stdout + done.stderr
    info = subprocess.run([*store, "image", "inspect", ref], capture_output=True, text=True, check=True)
    [img] = json.loads(info.stdout)
    assert "sha256:" + img["Id"] == exported.result["config_digest"]
    assert img["Digest"] == exported.result["manifest_digest"]
    assert img["Config"]["Entrypoint"] == exported.config["config"]["Entrypoint"]
    assert img["Config"]["Labels"]["io.pyrepro.lock.sha256"] == exported.config["config"]["Labels"][
        "io.pyrepro.lock.sha256"]
    assert img["RootFS"]["Layers"] == exported.config["rootfs"]["diff_ids"]
