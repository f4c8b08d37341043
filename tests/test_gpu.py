"""GPU driver discovery: Python (pyrepro.gpu) and the shell wrapper, on fake driver roots."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from pyrepro import gpu, proc
from tests.conftest import have, nix_env

WRAPPER = gpu.wrapper_script()
DRIVER = ["libcuda.so.1", "libcuda.so.535.104.05", "libnvidia-ml.so.1", "libnvidia-ml.so.535.104.05",
          "libnvidia-ptxjitcompiler.so.1", "libnvidia-ptxjitcompiler.so.535.104.05",
          "libEGL_nvidia.so.0"]
NOT_DRIVER = ["libc.so.6", "libstdc++.so.6", "libGL.so.1", "libnvidia-ml.so.1.bak"]


def make_root(tmp: Path, layout: str) -> Path:
    root = tmp / f"root-{layout}"
    if layout == "nixos":
        lib = root / "run/opengl-driver/lib"
        egl = root / "run/opengl-driver/share/glvnd/egl_vendor.d"
        names = DRIVER
    elif layout == "debian":
        lib = root / "usr/lib/x86_64-linux-gnu"
        egl = root / "usr/share/glvnd/egl_vendor.d"
        names = DRIVER
    elif layout == "partial":
        lib = root / "usr/lib64"
        egl = None
        names = ["libcuda.so.1", "libcuda.so.550.54.14"]
    elif layout == "none":
        lib = root / "usr/lib/x86_64-linux-gnu"
        egl = None
        names = []
    else:
        raise ValueError(layout)
    lib.mkdir(parents=True)
    for n in names + NOT_DRIVER:
        (lib / n).write_bytes(b"\x7fELF fake")
    if egl is not None:
        egl.mkdir(parents=True)
        (egl / "10_nvidia.json").write_text('{"ICD": {"library_path": "libEGL_nvidia.so.0"}}')
    if layout == "debian":
        (root / "proc/driver/nvidia").mkdir(parents=True)
        (root / "proc/driver/nvidia/version").write_text(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n")
    return root


def shell_probe(root: Path, extra_path: str = "", user: int | None = None) -> dict[str, str]:
    env = {"PATH": (extra_path + ":" if extra_path else "") + "/usr/bin:/bin", "PYREPRO_GPU_ROOT": str(root),
           "PYREPRO_GPU_PROBE": "1"}
    cmd = ["sh", str(WRAPPER), "true"]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def as_probe(d: gpu.Discovery) -> dict[str, str]:
    if d.driver is None:
        return {"found": "no"}
    i = d.driver
    return {"found": "yes", "kind": i.kind, "lib_dir": i.lib_dir, "libraries": " ".join(i.libraries),
            "version": i.version or "", "version_source": i.version_source or "",
            "missing": " ".join(i.missing), "egl": i.egl_vendor_file or ""}


@pytest.mark.parametrize("layout", ["nixos", "debian", "partial", "none"])
def test_discover_driver__fake_roots__python_and_shell_agree(tmp_path: Path, layout: str) -> None:
    root = make_root(tmp_path, layout)
    py = as_probe(gpu.discover_driver(root, runner=None))
    sh = shell_probe(root)
    sh.pop("searched", None)
    sh.pop("notes", None)
    assert py == sh


def test_discover_driver__nixos__wins_and_exposes_only_driver_libs(tmp_path: Path) -> None:
    root = make_root(tmp_path, "nixos")
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/libcuda.so.1").write_bytes(b"other")
    d = gpu.discover_driver(root, runner=None)
    assert d.driver is not None
    assert d.driver.kind == "nixos" and d.driver.lib_dir == "/run/opengl-driver/lib"
    assert set(d.driver.libraries) == set(DRIVER)
    assert d.driver.complete
    assert d.driver.version == "535.104.05" and d.driver.version_source == "libcuda"
    assert d.driver.egl_vendor_file == "/run/opengl-driver/share/glvnd/egl_vendor.d/10_nvidia.json"


def test_discover_driver__debian__version_from_proc(tmp_path: Path) -> None:
    d = gpu.discover_driver(make_root(tmp_path, "debian"), runner=None)
    assert d.driver is not None and d.driver.kind == "distro"
    assert (d.driver.version, d.driver.version_source) == ("535.104.05", "proc")


def test_discover_driver__nvidia_smi__preferred_version_source(tmp_path: Path) -> None:
    root = make_root(tmp_path, "debian")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 550.90.07\n")
    smi.chmod(0o755)
    d = gpu.discover_driver(root, runner=proc.run, path_env=str(bindir))
    assert d.driver is not None and (d.driver.version, d.driver.version_source) == ("550.90.07", "nvidia-smi")
    sh = shell_probe(root, extra_path=str(bindir))
    assert (sh["version"], sh["version_source"]) == ("550.90.07", "nvidia-smi")


def test_discover_driver__partial__missing_listed_and_warning(tmp_path: Path) -> None:
    d = gpu.discover_driver(make_root(tmp_path, "partial"), runner=None)
    assert d.driver is not None
    assert d.driver.missing == ("libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1")
    dec = gpu.decide("required", True, d)
    assert dec.use_gpu and dec.level == "warning" and "partial" in dec.message


def test_discover_driver__none__searched_listed(tmp_path: Path) -> None:
    d = gpu.discover_driver(make_root(tmp_path, "none"), runner=None)
    assert d.driver is None
    assert "/run/opengl-driver/lib" in d.searched and "/usr/lib/x86_64-linux-gnu" in d.searched


def test_discover_driver__unreadable_dir__skipped_with_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_root(tmp_path, "debian")
    blocked = root / "run/opengl-driver/lib"
    blocked.mkdir(parents=True)
    real_listdir = os.listdir

    def listdir(p: os.PathLike[str] | str) -> list[str]:
        if Path(p) == blocked:
            raise PermissionError(13, "Permission denied")
        return real_listdir(p)

    monkeypatch.setattr(gpu.os, "listdir", listdir)
    d = gpu.discover_driver(root, runner=None)
    assert d.driver is not None and d.driver.kind == "distro"
    assert any("permission denied" in n for n in d.notes)


@pytest.mark.skipif(os.geteuid() != 0 or not have("setpriv"), reason="needs root and setpriv to drop privileges")
def test_wrapper__unreadable_dir_as_unprivileged_user__skipped_with_note(tmp_path: Path) -> None:
    root = make_root(tmp_path, "debian")
    blocked = root / "run/opengl-driver/lib"
    blocked.mkdir(parents=True)
    (blocked / "libcuda.so.1").write_bytes(b"x")
    for p in [tmp_path, *tmp_path.parents]:
        p.chmod(p.stat().st_mode | stat.S_IXOTH | stat.S_IROTH)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames:
            Path(dirpath, n).chmod(0o755)
        for n in filenames:
            Path(dirpath, n).chmod(0o644)
    blocked.chmod(0o000)
    sh = shell_probe(root, user=65534)
    assert sh["kind"] == "distro"
    assert "permission denied" in sh["notes"]


@pytest.mark.parametrize(("need", "requested", "layout", "use", "level"), [
    ("none", False, "debian", False, "info"),
    ("none", True, "debian", False, "warning"),
    ("optional", False, "debian", False, "info"),
    ("optional", True, "debian", True, "ok"),
    ("optional", True, "none", False, "warning"),
    ("required", True, "none", False, "error"),
    ("required", False, "debian", True, "ok"),
])
def test_decide__policy_table(tmp_path: Path, need: str, requested: bool, layout: str, use: bool,
                              level: str) -> None:
    dec = gpu.decide(need, requested, gpu.discover_driver(make_root(tmp_path, layout), runner=None))
    assert (dec.use_gpu, dec.level) == (use, level)


def test_runtime_env__gpu__private_dir_first_and_no_system_dirs(tmp_path: Path) -> None:
    root = make_root(tmp_path, "debian")
    d = gpu.discover_driver(root, runner=None)
    assert d.driver is not None
    priv = gpu.expose(d.driver, tmp_path / "priv", root=root)
    assert sorted(p.name for p in priv.iterdir()) == sorted(DRIVER)
    assert all(p.is_symlink() and p.resolve().exists() for p in priv.iterdir())
    env = gpu.runtime_env({"LD_LIBRARY_PATH": "/opt/x"}, gpu.decide("optional", True, d), d.driver, priv)
    assert env["LD_LIBRARY_PATH"] == f"{priv}:/opt/x"
    assert "x86_64-linux-gnu" not in env["LD_LIBRARY_PATH"]
    cpu = gpu.runtime_env({}, gpu.decide("optional", False, d), d.driver, priv)
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and "LD_LIBRARY_PATH" not in cpu


def _run_wrapper(root: Path, need: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    prog = tmp / "prog.sh"
    prog.write_text('#!/bin/sh\necho "LD=${LD_LIBRARY_PATH:-} CVD=${CUDA_VISIBLE_DEVICES-unset} GPU=${PYREPRO_GPU:-} ARGS=$*"\n')
    prog.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PYREPRO_GPU_ROOT": str(root), "PYREPRO_GPU_NEED": need,
           "PYREPRO_GPU_PRIVATE": str(tmp / "priv"), "PYREPRO_USE_GPU": "1"}
    return subprocess.run(["sh", str(WRAPPER), str(prog), "--test", "a b"], env=env, capture_output=True,
                          text=True, check=False)


def test_wrapper__debian_root__execs_with_private_dir_and_one_line(tmp_path: Path) -> None:
    res = _run_wrapper(make_root(tmp_path, "debian"), "optional", tmp_path)
    assert res.returncode == 0
    assert res.stdout.strip() == f"LD={tmp_path}/priv CVD=unset GPU=535.104.05 ARGS=--test a b"
    assert res.stderr.strip() == ("pyrepro-gpu: NVIDIA driver 535.104.05 from /usr/lib/x86_64-linux-gnu "
                                  "(distro); exposing 7 libraries")
    assert sorted(p.name for p in (tmp_path / "priv").iterdir()) == sorted(DRIVER)


def test_wrapper__no_driver_optional__cpu_and_says_so(tmp_path: Path) -> None:
    res = _run_wrapper(make_root(tmp_path, "none"), "optional", tmp_path)
    assert res.returncode == 0 and "CVD= " in res.stdout
    assert "running on CPU" in res.stderr


def test_wrapper__no_driver_required__error_exit(tmp_path: Path) -> None:
    res = _run_wrapper(make_root(tmp_path, "none"), "required", tmp_path)
    assert res.returncode == 7 and res.stdout == ""
    assert "requires a GPU" in res.stderr


@pytest.mark.integration
@pytest.mark.skipif(not (have("nix-build") and Path("/bin/busybox").exists()), reason="needs nix-build and busybox")
def test_gpu_nix__busybox_stand_in_pkgs__wrapper_builds_and_runs(tmp_path: Path) -> None:
    """nix/gpu.nix evaluated and built for real, with a busybox stand-in for the few pkgs
    attributes it uses; the built wrapper then finds the fake Debian driver."""
    repo = Path(__file__).resolve().parent.parent
    bb = tmp_path / "bb" / "bin"
    bb.mkdir(parents=True)
    shutil.copy("/bin/busybox", bb / "busybox")
    for applet in ("sh", "sed", "grep", "awk", "ls", "mktemp", "mkdir", "ln", "head", "tr", "cat", "printf"):
        (bb / applet).symlink_to("busybox")
    root = make_root(tmp_path, "debian")
    expr = textwrap.dedent(f'''\
        let
          bbdir = builtins.path {{ path = {bb.parent}; name = "busybox-static"; }};
          bb = "${{bbdir}}/bin/busybox";
          pkgs = {{
            lib.makeBinPath = ds: builtins.concatStringsSep ":" (map (d: "${{d}}/bin") ds);
            coreutils = bbdir; gnugrep = bbdir; gnused = bbdir; gawk = bbdir;
            runtimeShell = "${{bbdir}}/bin/sh";
            writeShellScriptBin = name: text: builtins.derivation {{
              inherit name text; system = builtins.currentSystem; builder = bb; passAsFile = [ "text" ];
              args = [ "sh" "-c" "$bb mkdir -p $out/bin; (echo '#!${{bbdir}}/bin/sh'; $bb cat $textPath) > $out/bin/${{name}}; $bb chmod +x $out/bin/${{name}}" ];
              inherit bb;
            }};
          }};
          prog = pkgs.writeShellScriptBin "model" "echo model-ran LD=$LD_LIBRARY_PATH args=$*";
        in import {repo}/nix/gpu.nix {{ inherit pkgs; }} {{ name = "model-gpu"; program = "${{prog}}/bin/model"; gpu = "optional"; }}
        ''')
    (tmp_path / "t.nix").write_text(expr)
    out = proc.run(["nix-build", "--no-out-link", str(tmp_path / "t.nix")], env=nix_env()).stdout.strip()
    res = subprocess.run([f"{out}/bin/model-gpu", "--gpu", "--test"], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYREPRO_GPU_ROOT": str(root),
                              "PYREPRO_GPU_PRIVATE": str(tmp_path / "priv")}, check=True)
    assert res.stdout.strip() == f"model-ran LD={tmp_path}/priv args=--test"
    assert "NVIDIA driver 535.104.05" in res.stderr


@pytest.mark.parametrize("need", ["none", "optional", "required"])
@pytest.mark.parametrize("how", ["", "arg", "env"])
@pytest.mark.parametrize("layout", ["debian", "none"])
def test_policy__wrapper_and_local_backend__same_decision_and_environment(
        tmp_path: Path, need: str, how: str, layout: str) -> None:
    """One GPU policy: pyrepro.gpu.decide + runtime_env (local backend) and the Nix wrapper give
    the same GPU use, CUDA_VISIBLE_DEVICES, PYREPRO_GPU and refusal, for every case. `--gpu`
    requests the GPU and never reaches the program."""
    root = make_root(tmp_path, layout)
    requested = how != ""
    d = gpu.discover_driver(root, runner=None)
    dec = gpu.decide(need, requested, d)
    prog = tmp_path / "prog.sh"
    prog.write_text('#!/bin/sh\necho "LD=${LD_LIBRARY_PATH:-} CVD=${CUDA_VISIBLE_DEVICES-unset} '
                    'GPU=${PYREPRO_GPU:-} ARGS=$*"\n')
    prog.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PYREPRO_GPU_ROOT": str(root), "PYREPRO_GPU_NEED": need,
           "PYREPRO_GPU_PRIVATE": str(tmp_path / "priv")}
    if how == "env":
        env["PYREPRO_USE_GPU"] = "1"
    args = ["--test", *(["--gpu"] if how == "arg" else []), "a b"]
    res = subprocess.run(["sh", str(WRAPPER), str(prog), *args], env=env, capture_output=True, text=True,
                         check=False)
    if dec.level == "error":
        assert res.returncode == 7 and res.stdout == "" and "requires a GPU" in res.stderr
        return
    want = gpu.runtime_env({}, dec, d.driver, tmp_path / "priv" if dec.use_gpu else None)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (f"LD={want.get('LD_LIBRARY_PATH', '')} CVD={want.get('CUDA_VISIBLE_DEVICES', 'unset')} "
                                  f"GPU={want['PYREPRO_GPU']} ARGS=--test a b")
    assert ("warning" in res.stderr) == (dec.level == "warning")


def test_wrapper__own_private_dir__removed_when_the_program_ends(tmp_path: Path) -> None:
    root = make_root(tmp_path, "debian")
    prog = tmp_path / "prog.sh"
    prog.write_text('#!/bin/sh\nls "${LD_LIBRARY_PATH%%:*}" | wc -l; exit 4\n')
    prog.chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    res = subprocess.run(["sh", str(WRAPPER), str(prog), "--gpu"], capture_output=True, text=True, check=False,
                         env={"PATH": "/usr/bin:/bin", "PYREPRO_GPU_ROOT": str(root), "TMPDIR": str(tmp)})
    assert res.returncode == 4 and res.stdout.strip() == str(len(DRIVER))
    assert list(tmp.iterdir()) == []
