"""Finding the host's NVIDIA user-space driver at run time, nixGL-style.

A pure closure (Nix store, or a pyrepro environment) cannot contain the host's driver:
libcuda must match the kernel module. So at run time we look for it, in this order:

1. ``/run/opengl-driver/lib`` (NixOS, and nix-system-graphics on other distributions);
2. directories the dynamic loader cache lists for ``libcuda.so.1`` (``ldconfig -p``);
3. the usual distribution paths (Debian/Ubuntu multiarch, RHEL lib64, container and WSL paths).

The first directory holding a readable ``libcuda.so.1`` wins. Only the driver libraries in
it (libcuda, libnvidia-*, their EGL/GLX siblings) are exposed, as symlinks in a private
directory prepended to ``LD_LIBRARY_PATH``; never the whole system library directory,
which would leak the host's libc, libstdc++ and friends into the closure.

The driver version comes from ``nvidia-smi``, else ``/proc/driver/nvidia/version``, else the
``libcuda.so.<version>`` file name.

The same algorithm is implemented in ``pyrepro/data/gpu-wrapper.sh`` for the Nix wrapper
(``nix/gpu.nix``); ``tests/test_gpu.py`` runs both against the same fake driver roots and
requires identical answers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyrepro import proc
from pyrepro.errors import MissingToolError, PyreproError
from pyrepro.proc import Runner

NIXOS_DIR = "run/opengl-driver/lib"
DISTRO_DIRS = (
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/lib64",
    "usr/lib",
    "usr/lib/nvidia",
    "usr/local/nvidia/lib64",
    "usr/local/nvidia/lib",
    "usr/lib/wsl/lib",
)
# the libraries a CUDA program needs from the driver; a driver missing one is "partial"
REQUIRED = ("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1")
_DRIVER_LIB = re.compile(
    r"^(libcuda|libcudadebugger|libnvidia-[A-Za-z0-9_-]+|libnvcuvid|libnvoptix"
    r"|libEGL_nvidia|libGLX_nvidia|libGLESv2_nvidia|libGLESv1_CM_nvidia)\.so(\.[0-9.]+)?$"
)
_PROC_VERSION = re.compile(r"Kernel Module\s+([0-9][0-9.]*)")
_LIBCUDA_VERSION = re.compile(r"^libcuda\.so\.([0-9]+\.[0-9][0-9.]*)$")
EGL_VENDOR = "10_nvidia.json"


@dataclass(frozen=True)
class DriverInfo:
    """What was found. ``kind`` is ``nixos``, ``ldcache`` or ``distro``."""

    kind: str
    lib_dir: str  # as seen on the host (without the test root prefix)
    libraries: tuple[str, ...]  # file names, sorted
    version: str | None
    version_source: str | None  # nvidia-smi | proc | libcuda
    missing: tuple[str, ...]  # required libraries that are absent
    egl_vendor_file: str | None
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        ver = f"NVIDIA driver {self.version}" if self.version else "NVIDIA driver (version unknown)"
        s = f"{ver} from {self.lib_dir} ({self.kind}); exposing {len(self.libraries)} libraries"
        if self.missing:
            s += f"; partial: missing {', '.join(self.missing)}"
        return s

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "lib_dir": self.lib_dir, "libraries": list(self.libraries),
                "version": self.version, "version_source": self.version_source,
                "missing": list(self.missing), "complete": self.complete,
                "egl_vendor_file": self.egl_vendor_file, "notes": list(self.notes)}


@dataclass(frozen=True)
class Discovery:
    """The outcome of a search: the driver (or None) and what was looked at."""

    driver: DriverInfo | None
    searched: tuple[str, ...]
    notes: tuple[str, ...]


def _host(root: Path, p: Path) -> str:
    """``p`` as the host sees it, i.e. without the (test) root prefix."""
    try:
        return "/" + str(p.relative_to(root)).lstrip("/") if root != Path("/") else str(p)
    except ValueError:
        return str(p)


def ldcache_dirs(root: Path, runner: Runner | None) -> list[Path]:
    """Directories listed for libcuda.so.1 by ``ldconfig -p`` (only for the real root)."""
    if runner is None or root != Path("/"):
        return []
    try:
        out = runner(["ldconfig", "-p"], check=False).stdout
    except MissingToolError:
        ldconfig = "/sbin/ldconfig"
        if not os.path.exists(ldconfig):
            return []
        out = runner([ldconfig, "-p"], check=False).stdout
    dirs: list[Path] = []
    for line in out.splitlines():
        m = re.match(r"\s*libcuda\.so\.1\s.*=>\s*(\S+)", line)
        if m:
            d = Path(m.group(1)).parent
            if d not in dirs:
                dirs.append(d)
    return dirs


def candidate_dirs(root: Path, runner: Runner | None) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = [("nixos", root / NIXOS_DIR)]
    out += [("ldcache", d) for d in ldcache_dirs(root, runner)]
    out += [("distro", root / d) for d in DISTRO_DIRS]
    return out


def _readable(p: Path) -> bool:
    try:
        with p.open("rb"):
            return True
    except OSError:
        return False


def driver_version(root: Path, lib_names: Sequence[str], runner: Runner | None,
                   path_env: str | None = None) -> tuple[str | None, str | None]:
    """(version, source) from nvidia-smi, /proc, or the libcuda file name."""
    smi = proc.which("nvidia-smi", path=path_env)
    if smi is not None and runner is not None:
        try:
            res = runner([smi, "--query-gpu=driver_version", "--format=csv,noheader"], check=False,
                         timeout=20)
            first = res.stdout.strip().splitlines()[0].strip() if res.stdout.strip() else ""
            if res.returncode == 0 and re.fullmatch(r"[0-9][0-9.]*", first):
                return first, "nvidia-smi"
        except PyreproError:
            pass
    try:
        text = (root / "proc/driver/nvidia/version").read_text(errors="replace")
        m = _PROC_VERSION.search(text)
        if m:
            return m.group(1), "proc"
    except OSError:
        pass
    for name in sorted(lib_names):
        m = _LIBCUDA_VERSION.match(name)
        if m:
            return m.group(1), "libcuda"
    return None, None


def discover_driver(root: Path = Path("/"), *, runner: Runner | None = proc.run,
                    path_env: str | None = None) -> Discovery:
    """Search ``root`` (a fake root in tests) for the NVIDIA user-space driver."""
    searched: list[str] = []
    notes: list[str] = []
    for kind, d in candidate_dirs(root, runner):
        searched.append(_host(root, d))
        try:
            names = sorted(os.listdir(d))
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue
        except PermissionError:
            notes.append(f"cannot read {_host(root, d)}: permission denied")
            continue
        if "libcuda.so.1" not in names and "libcuda.so" not in names:
            continue
        if not _readable(d / ("libcuda.so.1" if "libcuda.so.1" in names else "libcuda.so")):
            notes.append(f"{_host(root, d)}/libcuda.so.1 is not readable")
            continue
        libs = tuple(n for n in names if _DRIVER_LIB.match(n) and _readable(d / n))
        missing = tuple(r for r in REQUIRED if r not in libs)
        version, source = driver_version(root, libs, runner, path_env)
        egl = None
        egl_dirs = ([d.parent / "share/glvnd/egl_vendor.d"] if kind == "nixos" else []) + [
            root / "usr/share/glvnd/egl_vendor.d", root / "etc/glvnd/egl_vendor.d"]
        for e in egl_dirs:
            if (e / EGL_VENDOR).is_file():
                egl = _host(root, e / EGL_VENDOR)
                break
        info = DriverInfo(kind, _host(root, d), libs, version, source, missing, egl, tuple(notes))
        return Discovery(info, tuple(searched), tuple(notes))
    return Discovery(None, tuple(searched), tuple(notes))


# --------------------------------------------------------------------------- policy


@dataclass(frozen=True)
class GpuDecision:
    use_gpu: bool
    level: str  # "ok" | "info" | "warning" | "error"
    message: str


def decide(need: str, requested: bool, discovery: Discovery) -> GpuDecision:
    """Combine the model's ``gpu`` field, the user's ``--gpu`` and what was found.

    * ``none``: always CPU; ``--gpu`` is a warning.
    * ``optional``: GPU only when requested and a complete driver was found; otherwise CPU,
      with a warning when it was requested.
    * ``required``: a missing driver is an error; a partial one a warning.
    """
    drv = discovery.driver
    if need == "none":
        if requested:
            return GpuDecision(False, "warning", "this model has no GPU code path; running on CPU")
        return GpuDecision(False, "info", "CPU run (model needs no GPU)")
    if need == "optional" and not requested:
        return GpuDecision(False, "info", "CPU run (GPU optional; pass --gpu to use one)")
    if drv is None:
        msg = "no NVIDIA driver found (searched " + ", ".join(discovery.searched) + ")"
        if need == "required":
            return GpuDecision(False, "error", msg + "; this model requires a GPU")
        return GpuDecision(False, "warning", msg + "; running on CPU")
    if drv.missing:
        return GpuDecision(True, "warning", drv.summary())
    return GpuDecision(True, "ok", drv.summary())


def expose(driver: DriverInfo, private_dir: Path, root: Path = Path("/")) -> Path:
    """Create ``private_dir`` with symlinks to exactly the driver libraries."""
    private_dir.mkdir(parents=True, exist_ok=True)
    src_dir = root / driver.lib_dir.lstrip("/") if root != Path("/") else Path(driver.lib_dir)
    for name in driver.libraries:
        link = private_dir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(src_dir / name)
    return private_dir


def device_nodes(dev: Path = Path("/dev")) -> tuple[Path, ...]:
    """The NVIDIA device nodes a sandboxed run that uses the GPU is given (``/dev/nvidia0``,
    ``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ...; none on a machine without the driver)."""
    return tuple(sorted(dev.glob("nvidia*"))) + tuple(sorted((dev / "dri").glob("*"))) if dev.is_dir() else ()


def runtime_env(base: Mapping[str, str], decision: GpuDecision, driver: DriverInfo | None,
                private_dir: Path | None) -> dict[str, str]:
    """The environment a run gets: driver libraries first on ``LD_LIBRARY_PATH`` when the
    GPU is used; ``CUDA_VISIBLE_DEVICES=""`` otherwise, so frameworks do not probe."""
    env = dict(base)
    if decision.use_gpu and driver is not None and private_dir is not None:
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = str(private_dir) + (f":{old}" if old else "")
        env["TRITON_LIBCUDA_PATH"] = str(private_dir)
        if driver.egl_vendor_file:
            env["__EGL_VENDOR_LIBRARY_FILENAMES"] = driver.egl_vendor_file
        env["PYREPRO_GPU"] = driver.version or "unknown"
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["PYREPRO_GPU"] = "none"
    return env


def wrapper_script() -> Path:
    """The shell implementation used by ``nix/gpu.nix``."""
    return Path(__file__).parent / "data" / "gpu-wrapper.sh"
