"""The sandbox of foreign code (pyrepro.sandbox) and what it blocks.

The hostile script below tries, in order: the network (a TCP server of the test's own on the
host's loopback, and PyPI), writing outside its folders (a folder of the test, the host's /tmp,
the project checkout, its own environment, another model's environment), reading secrets
(/etc/shadow, a file of the test), and planting a .pth in its environment. It writes what each
attempt did into its output folder (the one folder a run may write) and exits 3.

CI installs bubblewrap (tests/run.sh): these tests run there; they skip only where bwrap is not
installed at all.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyrepro import sandbox, verify
from pyrepro.cli import main
from tests.fakes import json_result

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

HOSTILE = textwrap.dedent('''
    """A submission that tries everything a sandbox must stop."""
    import argparse, glob, json, os, socket, sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--output-dir", default=".")
    ap.add_argument("--benchmark"); ap.add_argument("--benchmarks-dir"); ap.add_argument("--data-dir")
    ap.add_argument("--test", action="store_true")
    args, _ = ap.parse_known_args()
    here = os.path.dirname(os.path.abspath(__file__))
    t = json.load(open(os.path.join(here, "targets.json")))
    import six  # the one dependency
    out = {}

    def attempt(name, fn):
        try:
            fn()
            out[name] = "DONE"
        except Exception as exc:  # blocked
            out[name] = "blocked: " + type(exc).__name__

    def connect(host, port):
        s = socket.create_connection((host, port), timeout=3)
        s.sendall(b"leaked")
        s.close()

    def write(path):
        with open(path, "a") as f:
            f.write("hostile\\n")

    def read(path):
        with open(path) as f:
            out["read " + path] = f.read()[:40]

    attempt("net-host-loopback", lambda: connect("127.0.0.1", t["port"]))
    attempt("net-pypi", lambda: connect("pypi.org", 443))
    attempt("write-outside", lambda: write(os.path.join(t["outside"], "written.txt")))
    attempt("write-host-tmp", lambda: write(t["host_tmp"]))
    attempt("write-checkout", lambda: write(os.path.join(t["checkout"], "written.txt")))
    attempt("write-own-env", lambda: write(six.__file__))
    attempt("plant-pth", lambda: write(os.path.join(os.path.dirname(six.__file__), "evil.pth")))
    attempt("write-own-source", lambda: write(os.path.abspath(__file__)))
    others = [p for p in glob.glob(os.path.join(t["envs"], "*"))
              if os.path.isdir(p) and os.path.realpath(p) != os.path.realpath(sys.prefix)]
    out["other-envs-visible"] = others
    for p in others:
        for f in glob.glob(os.path.join(p, "lib", "python*", "site-packages", "six.py")):
            attempt("write-other-env", lambda f=f: write(f))
    attempt("read-shadow", lambda: read("/etc/shadow"))
    attempt("read-secret", lambda: read(t["secret"]))
    with open(os.path.join(args.output_dir, "attempts.json"), "w") as f:
        json.dump(out, f)
    sys.exit(3)
''')


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's loopback that records what reaches it."""
    got: list[bytes] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    srv.settimeout(0.5)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                got.append(conn.recv(100))

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield srv.getsockname()[1], got
    stop.set()
    th.join(2)
    srv.close()


def _targets(tmp_path: Path, port: int, checkout: Path, envs: Path) -> dict[str, Any]:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    return {"port": port, "outside": str(outside), "host_tmp": f"/tmp/pyrepro-hostile-{os.getpid()}-{tmp_path.name}",
            "checkout": str(checkout), "envs": str(envs), "secret": str(secret)}


def _assert_blocked(attempts: dict[str, Any], t: dict[str, Any], got: list[bytes]) -> None:
    # /tmp is the run's private one: a write there succeeds and never reaches the host's /tmp
    done = {k: v for k, v in attempts.items() if (v == "DONE" and k != "write-host-tmp") or k.startswith("read ")}
    assert not done, attempts
    assert attempts["other-envs-visible"] == [], attempts
    assert got == []
    assert not (Path(t["outside"]) / "written.txt").exists()
    assert not Path(t["host_tmp"]).exists()
    assert not (Path(t["checkout"]) / "written.txt").exists()


@pytest.fixture(autouse=True)
def _sandbox_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default decision (conftest switches it off for the fake-runner tests elsewhere)."""
    monkeypatch.setenv(sandbox.SETTING, "auto")
    sandbox._PROBED.clear()


# ------------------------------------------------------------------ the decision


def _no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, **kw: None if name == "bwrap" else real(name, **kw))


def test_choose__switched_off__none_and_the_record_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.SETTING, "off")
    box = sandbox.choose()
    assert not box.active and "NOT sandboxed" in box.to_json()["note"]
    assert box.wrap(["python", "x.py"], sandbox.Mounts()) == ["python", "x.py"]


def test_choose__no_bwrap__refused_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sandbox.SETTING, raising=False)
    _no_bwrap(monkeypatch)
    with pytest.raises(sandbox.SandboxUnavailable) as err:
        sandbox.choose()
    assert "apt-get install bubblewrap" in (err.value.hint or "") and "--no-sandbox" in (err.value.hint or "")


def test_run_cli__no_bwrap__exit_7_naming_the_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything is built (the model's lock is never read)."""
    _no_bwrap(monkeypatch)
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    code = main(["run", "cfid", "--test", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 7 and doc["ok"] is False and "bubblewrap" in doc["error"]["message"]


def test_wrap__mounts__read_only_writable_network(tmp_path: Path) -> None:
    box = sandbox.Sandbox("bwrap", "/usr/bin/bwrap")
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    argv = box.wrap(["python", "-c", "1"], sandbox.Mounts(read_only=(ro,), writable=(rw,)), cwd=rw)
    assert argv[0] == "/usr/bin/bwrap" and argv[-3:] == ["python", "-c", "1"]
    assert "--share-net" not in argv and "--unshare-all" in argv
    assert argv[argv.index("--ro-bind", argv.index("--tmpfs")) + 1] == str(ro)
    assert ["--bind", str(rw), str(rw)] == argv[argv.index(str(rw)) - 1: argv.index(str(rw)) + 2]
    assert "/etc/shadow" not in argv and "/root" not in argv and "/home" not in argv
    with_net = box.wrap(["true"], sandbox.Mounts(network=True))
    assert "--share-net" in with_net


def test_interpreter_paths__a_venv__the_installation_it_was_made_from(tmp_path: Path) -> None:
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    base = Path(sys.base_prefix).resolve()
    found = [p.resolve() for p in sandbox.interpreter_paths(env)]
    assert base in found or any(str(base).startswith(s) for s in sandbox.SYSTEM)


# ------------------------------------------------------------------ what it blocks, directly


@needs_bwrap
def test_sandbox__hostile_script_in_a_venv__every_attempt_blocked(tmp_path: Path, listener: Any) -> None:
    port, got = listener
    envs = tmp_path / "cache" / "envs"
    env, other = envs / "hostile-1", envs / "victim-1"
    for e in (env, other):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(e)], check=True)
        sp = next((e / "lib").glob("python*/site-packages"))
        (sp / "six.py").write_text("PY3 = True\n")
        verify.write_manifest(e)
    src = tmp_path / "src"
    src.mkdir()
    t = _targets(tmp_path, port, tmp_path / "checkout", envs)
    (tmp_path / "checkout").mkdir()
    (src / "run.py").write_text(HOSTILE)
    (src / "targets.json").write_text(json.dumps(t))
    work, out = tmp_path / "run" / "work", tmp_path / "run" / "out"
    box = sandbox.choose()
    mounts = sandbox.for_environment(env).plus(read_only=[src], writable=[work, out])
    done = subprocess.run(box.wrap([str(env / "bin" / "python"), str(src / "run.py"), "--output-dir", str(out)],
                                   mounts, cwd=work), env={"PATH": "/usr/bin:/bin", "HOME": str(work)},
                          capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    attempts = json.loads((out / "attempts.json").read_text())
    _assert_blocked(attempts, t, got)
    for e in (env, other):
        verify.verify_env(e, rebuild_hint="")  # neither environment changed


# ------------------------------------------------------------------ through the CLI


def _write_patch(root: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A reviewed one-line patch (reproduce runs --test only for a model with a series)."""
    copy = root / "copy"
    assert main(["patch", "apply", name, "--out", str(copy)]) == 0
    run_py = copy / "run.py"
    run_py.write_text(run_py.read_text() + "# pyrepro: test mode is the script itself\n")
    assert main(["patch", "new", name, "--from", str(copy), "--slug", "test-mode", "--category", "test-mode",
                 "--why", "the uniform CLI", "--effect", "none: a comment"]) == 0
    capsys.readouterr()


@needs_bwrap
@pytest.mark.integration
@pytest.mark.network
def test_reproduce_and_run_cli__hostile_submission__blocked_exit_12_other_env_untouched(
        repro_project: Path, isolated_cache: Path, tmp_path: Path, listener: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    port, got = listener
    t = _targets(tmp_path, port, repro_project, isolated_cache / "envs")
    for name, script in (("victim", "import six\nprint(six.PY3)\n"), ("hostile", HOSTILE)):
        folder = tmp_path / "subs" / name
        folder.mkdir(parents=True)
        (folder / "run.py").write_text(script)
        (folder / "requirements.txt").write_text("six==1.16.0\n")
        (folder / "targets.json").write_text(json.dumps(t))
        assert main(["reproduce", str(folder), "--json"]) == 0, capsys.readouterr()
        capsys.readouterr()
    victim_env = next((isolated_cache / "envs").glob("victim-*"))
    uv_cache = sorted(p for p in isolated_cache.rglob("six.py") if "envs" not in p.parts)

    _write_patch(tmp_path, "hostile", capsys)
    code = main(["reproduce", str(tmp_path / "subs" / "hostile"), "--test", "--json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert code == 12 and doc["ok"] is False, out
    rec = doc["result"] if doc["result"] else {}
    run_stage = next(s for s in rec["stages"] if s["stage"] == "run")
    assert run_stage["status"] == "failed" and "exit 3" in run_stage["detail"]
    runs = sorted((isolated_cache / "runs" / "hostile").glob("*/record.json"))
    record = json.loads(runs[-1].read_text())
    assert record["sandbox"]["kind"] == "bwrap" and record["exit_code"] == 3
    _assert_blocked(json.loads((runs[-1].parent / "out" / "attempts.json").read_text()), t, got)

    code = main(["run", "hostile", "--test", "--draft", "--json"])
    capsys.readouterr()
    assert code == 12
    runs = sorted((isolated_cache / "runs" / "hostile").glob("*/record.json"))
    _assert_blocked(json.loads((runs[-1].parent / "out" / "attempts.json").read_text()), t, got)

    verify.verify_env(victim_env, rebuild_hint="")
    for p in uv_cache:
        assert "hostile" not in p.read_text(errors="replace")
    assert main(["check-imports", "victim", "--json"]) == 0
    assert json_result(capsys.readouterr().out)["results"][0][1] == "ok"


# ------------------------------------------------------------------ where the sandbox is applied


def test_build_env__sdist_build_in_the_sandbox_with_network__wheels_installed_outside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An sdist's build runs setup.py from the index: in bwrap, with the network (its isolated
    build fetches build requirements), writable only the environment being built and its own work
    folder. Installing the locked wheels runs no foreign code: not wrapped."""
    from pyrepro import proc
    from pyrepro.backends import local
    from pyrepro.proc import Completed
    from tests.test_backend_sdist import sdist_model

    monkeypatch.setenv(sandbox.SETTING, "auto")
    monkeypatch.setattr(sandbox, "choose", lambda **kw: sandbox.Sandbox("bwrap", "/usr/bin/bwrap"))
    monkeypatch.setattr("pyrepro.index._urllib_fetch", lambda url: None)
    _root, paths, spec = sdist_model(tmp_path)
    calls: list[list[str]] = []
    reqs: list[str] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        inner = argv[argv.index("--") + 1:] if argv[0] == "/usr/bin/bwrap" else argv
        if inner[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            calls.append(argv)
            reqs.append(Path(argv[-1]).read_text() if argv[-2] == "-r" else "")
            if argv[0] == "/usr/bin/bwrap":
                assert kw["env"]["HOME"] != os.environ.get("HOME") and "pyrepro-build-" in kw["env"]["HOME"]
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    env_dir, *_ = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    boxed = [c for c in calls if c[0] == "/usr/bin/bwrap"]
    plain = [c for c in calls if c[0] != "/usr/bin/bwrap"]
    assert len(boxed) == 1 and "torch-scatter" in reqs[calls.index(boxed[0])]
    b = boxed[0]
    assert "--share-net" in b and "--unshare-all" in b
    writable = [b[i + 1] for i, a in enumerate(b) if a == "--bind"]
    assert any(w.startswith(str(paths.cache / "envs")) for w in writable)  # the environment being built
    assert not any(w in (str(paths.cache), str(paths.root), os.environ.get("HOME", "/root")) for w in writable)
    assert all("--only-binary" in c for c in plain if c[3] == "install")  # a wheel never falls back to its sdist
    assert verify.has_manifest(env_dir)


def test_check_imports__verified_before_anything_runs__then_probed_in_the_sandbox(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro import run
    from pyrepro.backends import BuiltModel
    from pyrepro.errors import IntegrityError
    from pyrepro.proc import Completed
    from pyrepro.registry import load_registry

    monkeypatch.setattr(sandbox, "choose", lambda **kw: sandbox.Sandbox("bwrap", "/usr/bin/bwrap"))
    cache = tmp_path / "cache"
    env, staged = cache / "envs" / "mini-k", cache / "staged" / "mini-s"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("#!/bin/sh\n")
    (staged / "src").mkdir(parents=True)
    (staged / "runtime").mkdir()
    (staged / "src" / "run.py").write_text("import six\n")
    verify.write_manifest(env)
    verify.write_manifest(staged)
    built = BuiltModel("mini", "local", env, "k" * 20, staged / "src", staged / "runtime", "s" * 20, tmp_path / "l",
                       "3.11.9", True, True, 0.0)
    spec = load_registry(Path(__file__).parent / "scenarios" / "backend" / "models").get("mini")
    seen: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        seen.append([str(c) for c in cmd])
        return Completed(tuple(cmd), 0, '@@PYREPRO@@[["six", "ok", ""]]@@PYREPRO@@', "")

    monkeypatch.setattr(run, "probe_result", lambda out: out.split("@@PYREPRO@@")[1])
    assert run.check_imports(spec, built, modules=["six"], runner=runner) == [("six", "ok", "")]
    (argv,) = seen
    assert argv[0] == "/usr/bin/bwrap" and "--share-net" not in argv
    assert ["--ro-bind", str(env), str(env)] == argv[argv.index(str(env)) - 1: argv.index(str(env)) + 2]
    # a planted .pth: refused before the interpreter of the environment is started
    (env / "lib").mkdir()
    (env / "lib" / "evil.pth").write_text("import os\n")
    seen.clear()
    with pytest.raises(IntegrityError, match="evil.pth"):
        run.check_imports(spec, built, modules=["six"], runner=runner)
    assert seen == []


@pytest.mark.parametrize("argv, target", [
    (["build", "cfid"], "pyrepro.backends.local.build"),
    (["check-imports", "cfid"], "pyrepro.backends.local.build"),
    (["run", "cfid", "--test"], "pyrepro.run.run_many"),
    (["reproduce", "."], "pyrepro.reproduce.reproduce"),
])
def test_cli__no_sandbox_flag__the_decision_is_off_for_that_command(
        argv: list[str], target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.errors import PyreproError

    seen: list[str] = []

    def stop(*a: Any, **kw: Any) -> Any:
        seen.append(sandbox.choose().kind)
        raise PyreproError("stopped here")

    monkeypatch.setattr(target, stop)
    assert main([*argv, "--no-sandbox"]) == 1
    assert seen == ["none"]
