"""Python 2 submissions: pip on the target interpreter locks (``pyrepro.piplock``), virtualenv
builds, the import probe runs on Python 2. Through ``lock_request`` with a fake pip, and (network,
integration) for real from an empty cache."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro import lock, piplock
from pyrepro.proc import Completed
from tests.fakes import FakeRunner

PY2 = Path("/opt/fake/python2.7")


def _project(tmp_path: Path, deps: list[str]) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    body = ", ".join(f'"{x}"' for x in deps)
    d.joinpath("pyproject.toml").write_text(f'[project]\nname = "m"\nversion = "0"\nrequires-python = "==2.7.*"\n'
                                            f"dependencies = [{body}]\n\n[tool.pdm]\ndistribution = false\n")
    return d


def _fake_pip(files: dict[str, bytes], seen: list[list[str]], fail: str = "") -> FakeRunner:
    """A ``python2.7 -m pip download`` that saves ``files`` into its --dest (or fails with ``fail``)."""
    def pip(argv, cwd, env):  # type: ignore[no-untyped-def]
        seen.append(list(argv))
        if fail:
            return Completed(tuple(argv), 1, "", fail)
        dest = Path(argv[argv.index("--dest") + 1])
        for name, body in files.items():
            (dest / name).write_bytes(body)
        return Completed(tuple(argv), 0, "Successfully downloaded", "")

    return FakeRunner().on([str(PY2), "-m", "pip", "download"], pip)


@pytest.fixture()
def _no_lock_env(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    """The fake pip answers for the interpreter itself: no Python 2 lock environment is made."""
    monkeypatch.setattr(piplock, "resolver_python", lambda python, cache, runner=None: python)


@pytest.mark.usefixtures("_no_lock_env")
def test_lock_request__python_27__pip_downloads__a_pdm_lock_with_hashes_and_no_date_bound(tmp_path: Path) -> None:
    d = _project(tmp_path, ["six", "numpy<1.17"])
    seen: list[list[str]] = []
    files = {"six-1.16.0-py2.py3-none-any.whl": b"six", "numpy-1.16.6-cp27-cp27mu-manylinux1_x86_64.whl": b"np",
             "future-0.18.3.tar.gz": b"future"}
    runner = _fake_pip(files, seen)
    req = lock.LockRequest("m", d, "2.7", submitted=dt.date(2019, 5, 1))
    out = lock.lock_request(req, runner=runner, python_exe=PY2, start="as-declared")  # asked for: no bound
    assert out.category == 1 and out.strategy == "as-declared" and len(seen) == 1  # no date-bounded attempt
    assert Path(seen[0][seen[0].index("-r") + 1]).name == "requirements.in"
    # the newest release with a wheel for this Python before a newer sdist (grpcio 1.39.0's cp27
    # wheel, not 1.41.1's sdist, which failed to compile after 5 minutes: seqgan, corpus16 dev)
    assert "--prefer-binary" in seen[0]
    text = (d / "pdm.lock").read_text()
    assert f'hash = "sha256:{hashlib.sha256(b"np").hexdigest()}"' in text
    assert lock.read_lock_versions(text) == {"future": "0.18.3", "numpy": "1.16.6", "six": "1.16.0"}
    assert lock.check_lock_dir(d) == []  # pdm's content hash, files with file and hash
    record = (d / "lock.toml").read_text()
    assert 'resolver = "pip"' in record and "no date bound" in record and "pdm = " not in record
    from pyrepro.backends.local import locked_packages

    pkgs = {p.name: p for p in locked_packages(d / "pdm.lock", "2.7", "linux-x86_64")}
    assert pkgs["future"].sdist_only and not pkgs["six"].sdist_only


@pytest.mark.usefixtures("_no_lock_env")
def test_lock_request__python_27__pip_finds_no_release__the_relaxation_rules_read_pips_words(
        tmp_path: Path) -> None:
    """pip's "No matching distribution found" is read like pdm's not-found: a name the index lacks
    is dropped (rule not-on-index) and pip locks the rest."""
    d = _project(tmp_path, ["six", "nosuchthing==9.9"])
    seen: list[list[str]] = []
    msg = ("ERROR: Could not find a version that satisfies the requirement nosuchthing==9.9 (from -r r.in (line 1)) "
           "(from versions: none)\nERROR: No matching distribution found for nosuchthing==9.9\n")

    def pip(argv, cwd, env):  # type: ignore[no-untyped-def]
        reqs = Path(argv[argv.index("-r") + 1]).read_text().split()
        seen.append(reqs)
        if "nosuchthing==9.9" in reqs:
            return Completed(tuple(argv), 1, "", msg)
        (Path(argv[argv.index("--dest") + 1]) / "six-1.16.0-py2.py3-none-any.whl").write_bytes(b"six")
        return Completed(tuple(argv), 0, "", "")

    runner = FakeRunner().on([str(PY2), "-m", "pip", "download"], pip)
    runner.on([lock.sys.executable, "-m", "pip", "index"], Completed((), 1, "", "ERROR: No matching distribution"))
    runner.on([lock.sys.executable, "-c"], Completed((), 0, "\n", ""))
    out = lock.lock_request(lock.LockRequest("m", d, "2.7"), runner=runner, python_exe=PY2)
    assert out.category == 2 and [s.rule for s in out.steps] == ["not-on-index"]
    assert "satisfies the requirement nosuchthing==9.9" in out.steps[0].trigger
    assert seen[-1] == ["six"] and lock.read_lock_versions((d / "pdm.lock").read_text()) == {"six": "1.16.0"}


ASE_REFUSES = """Collecting ase
  Downloading ase-{v}.tar.gz (1.9 MB)
DEPRECATION: Python 2.7 reached the end of its life on January 1st, 2020.
    ERROR: Command errored out with exit status 1:
     command: /x/bin/python -c 'import sys, setuptools, tokenize; ...' egg_info --egg-base /tmp/pip-pip-egg-info-Y
         cwd: /tmp/pip-download-U/ase/
    Complete output (1 lines):
    Python 3.5 or later is required!
    ----------------------------------------
ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.
"""


PYMC_NEEDS_NUMPY = """Collecting pymc
  Downloading pymc-2.3.8.tar.gz (385 kB)
    ERROR: Command errored out with exit status 1:
     command: /x/bin/python -c 'import sys, setuptools, tokenize; ...' egg_info --egg-base /tmp/pip-pip-egg-info-T
         cwd: /tmp/pip-download-dB7Yhm/pymc/
    Complete output (9 lines):
    Traceback (most recent call last):
      File "/tmp/pip-download-dB7Yhm/pymc/setup.py", line 124, in setup_pymc
        .format(numpy_req_str))
    ImportError: NumPy is not installed.
    PyMC requires NumPy >= 1.8.
    ----------------------------------------
ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.
"""


@pytest.mark.usefixtures("_no_lock_env")
def test_lock_request__python_27__setup_py_imports_numpy_for_metadata__installed_first_then_locked(
        tmp_path: Path) -> None:
    """spearmint (corpus8 held, 2016): pymc 2.3.8's setup.py needs NumPy to write its metadata
    ("ImportError: NumPy is not installed."), and pip on Python 2 runs it in the resolving
    environment: numpy goes in there, pip downloads again, and the lock says why. A setup.py that
    fails for another reason is not retried."""
    d = _project(tmp_path, ["pymc", "numpy"])
    installed: list[str] = []

    def pip(argv, cwd, env):  # type: ignore[no-untyped-def]
        if "numpy" not in installed:
            return Completed(tuple(argv), 1, "", PYMC_NEEDS_NUMPY)
        dest = Path(argv[argv.index("--dest") + 1])
        (dest / "pymc-2.3.8.tar.gz").write_bytes(b"pymc")
        (dest / "numpy-1.16.6-cp27-cp27mu-manylinux1_x86_64.whl").write_bytes(b"np")
        return Completed(tuple(argv), 0, "Successfully downloaded", "")

    def install(argv, cwd, env):  # type: ignore[no-untyped-def]
        installed.append(argv[-1])
        return Completed(tuple(argv), 0, "Successfully installed numpy-1.16.6", "")

    runner = FakeRunner().on([str(PY2), "-m", "pip", "download"], pip).on([str(PY2), "-m", "pip", "install"], install)
    out = lock.lock_request(lock.LockRequest("m", d, "2.7"), runner=runner, python_exe=PY2)
    assert out.category == 1 and installed == ["numpy"]
    assert lock.read_lock_versions((d / "pdm.lock").read_text()) == {"numpy": "1.16.6", "pymc": "2.3.8"}
    assert piplock.setup_import(PYMC_NEEDS_NUMPY) == "numpy"
    assert piplock.setup_import(ASE_REFUSES.format(v="3.19.2")) is None
    assert piplock.setup_import("ImportError: No module named Cython.Build\n... egg_info ...") == "cython"
    assert piplock.setup_import("ImportError: No module named numpy (not a metadata build)") is None


@pytest.mark.usefixtures("_no_lock_env")
@pytest.mark.parametrize("declared", ["ase", None])
def test_lock_request__python_27__sdist_refuses_python_2__older_series_each_time(
        tmp_path: Path, declared: str | None) -> None:
    """imatgen (corpus7 dev): pip on 2.7 took ase 3.19.2, whose release has no Requires-Python, and
    its setup.py refused Python 2 ("Python 3.5 or later is required!"); then 3.18.2 did too. Each
    refusal excludes that minor series and newer (rule older-series-for-python), the next one two
    series more, for a declared requirement and for one that came in through another (then added
    beside it)."""
    d = _project(tmp_path, ["numpy", declared] if declared else ["numpy", "asetools"])
    seen: list[list[str]] = []

    def pip(argv, cwd, env):  # type: ignore[no-untyped-def]
        reqs = Path(argv[argv.index("-r") + 1]).read_text().split()
        seen.append(reqs)
        ase = next((r for r in reqs if r == "ase" or r.startswith("ase<")), "ase")
        from packaging.requirements import Requirement

        v = max((r for r in ("3.16.0", "3.17.0", "3.18.2", "3.19.2") if Requirement(ase).specifier.contains(r)),
                key=lambda r: tuple(map(int, r.split("."))))
        if v >= "3.18":
            return Completed(tuple(argv), 1, "", ASE_REFUSES.format(v=v))
        (Path(argv[argv.index("--dest") + 1]) / f"ase-{v}.tar.gz").write_bytes(b"ase")
        return Completed(tuple(argv), 0, "", "")

    runner = FakeRunner().on([str(PY2), "-m", "pip", "download"], pip)
    out = lock.lock_request(lock.LockRequest("m", d, "2.7"), runner=runner, python_exe=PY2)
    assert out.category == 2 and [s.rule for s in out.steps] == ["older-series-for-python"] * 2
    # the second refusal of one distribution excludes two series (a descent doubles its steps)
    assert [(s.before, s.after) for s in out.steps] == ([("ase", "ase<3.19"), ("ase<3.19", "ase<3.17")] if declared
                                                        else [("", "ase<3.19"), ("ase<3.19", "ase<3.17")])
    assert "ase 3.19.2 refuses this Python (Python 3.5 or later is required!)" in out.steps[0].reason
    assert "Python 3.5 or later" in out.steps[0].trigger
    assert lock.read_lock_versions((d / "pdm.lock").read_text()) == {"ase": "3.16.0"}


NUMEXPR_BUILD_DEPS = """Collecting numexpr>=2.6.2
  Downloading numexpr-2.8.1.tar.gz (94 kB)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  ERROR: Command errored out with exit status 1:
   command: /x/bin/python /x/pip install --ignore-installed --no-user --prefix /tmp/o -- setuptools wheel oldest-supported-numpy
  Complete output (15 lines):
  Collecting setuptools
    Downloading setuptools-44.1.1-py2.py3-none-any.whl (583 kB)
  ERROR: Could not find a version that satisfies the requirement oldest-supported-numpy (from versions: none)
  ERROR: No matching distribution found for oldest-supported-numpy
  ----------------------------------------
ERROR: Command errored out with exit status 1: /x/bin/python /x/pip install ... Check the logs for full command output.
"""
OAUTHLIB_METADATA = """Collecting cachetools<5.0,>=2.0.0
  Downloading cachetools-3.1.1-py2.py3-none-any.whl (11 kB)
Processing /opt/pypi/files/requests_oauthlib-2.0.0-py2.py3-none-any.whl
ERROR: Package 'requests-oauthlib' requires a different Python: 2.7.18 not in '>=3.4'
"""


PYFACE_PY3_OPEN = """Collecting pyface>=6.1.1
  Downloading pyface-7.2.0.tar.gz (4.0 MB)
    ERROR: Command errored out with exit status 1:
     command: /x/bin/python -c 'import sys, setuptools, tokenize; ...' egg_info --egg-base /tmp/pip-pip-egg-info-W
         cwd: /tmp/pip-download-9Mtsnp/pyface/
    Complete output (7 lines):
    Traceback (most recent call last):
      File "/tmp/pip-download-9Mtsnp/pyface/setup.py", line 298, in <module>
        with open("README.rst", "r", encoding="utf-8") as readme:
    TypeError: 'encoding' is an invalid keyword argument for this function
    ----------------------------------------
ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.
"""


SOCKETIO_NEEDS_NEWER = """Collecting flask-socketio
  Downloading Flask_SocketIO-4.3.2-py2.py3-none-any.whl (16 kB)
Collecting python-socketio>=5.0.2
  Downloading python-socketio-5.0.4.tar.gz (45 kB)
ERROR: Could not find a version that satisfies the requirement bidict>=0.21.0 (from python-socketio>=5.0.2->\
flask-socketio->-r /tmp/pyrepro-piplock-9h8950y1/requirements.in (line 2)) (from versions: 0.1.5, 0.17.5, 0.18.4)
ERROR: No matching distribution found for bidict>=0.21.0 (from python-socketio>=5.0.2->flask-socketio->-r x (line 2))
"""


BATCHGENERATORS_NEEDS_PY3 = """Collecting batchgenerators
  Downloading batchgenerators-0.19.7.tar.gz (49 kB)
ERROR: Could not find a version that satisfies the requirement threadpoolctl (from batchgenerators->-r \
/tmp/pyrepro-piplock-s4xww89f/requirements.in (line 1)) (from versions: none)
ERROR: No matching distribution found for threadpoolctl (from batchgenerators->-r x (line 1))
"""


@pytest.mark.parametrize(("text", "package", "after", "said"), [
    # a fetched release whose dependency has releases, none for Python 2 (tensormol, corpus10 dev)
    (SOCKETIO_NEEDS_NEWER, "python-socketio", "python-socketio<5.0", "whose releases for this Python end at 0.18.4"),
    # ... or no release for Python 2 at all (brats2017, corpus12 held: threadpoolctl is >=3.5 from its first)
    (BATCHGENERATORS_NEEDS_PY3, "batchgenerators", "batchgenerators<0.19", "which has no release for this Python"),
    # a sdist whose build requirement has no Python 2 release (grammarvae, corpus6 dev: through tables)
    (NUMEXPR_BUILD_DEPS, "numexpr", "numexpr<2.8", "its build requirements do not install"),
    # a setup.py written for Python 3 (open(..., encoding=)): protfun's mayavi -> pyface 7.2.0, corpus9 dev
    (PYFACE_PY3_OPEN, "pyface", "pyface<7.2", "'encoding' is an invalid keyword argument"),
    # a file whose own metadata excludes Python 2, which the (local) index listing did not say
    (OAUTHLIB_METADATA, "requests-oauthlib", "requests-oauthlib<2.0", "requires Python >=3.4"),
])
def test_relax__pip_on_python_2__release_made_for_a_newer_python__its_series_excluded(
        text: str, package: str, after: str, said: str) -> None:
    from pyrepro import relax

    problems = [p for p in relax.diagnose(text) if p.kind == "python-refused"]
    assert [p.package for p in problems] == [package] and said in problems[0].excerpt
    step = relax.relax(text, ("numpy", "tables"))
    assert step is not None and (step.rule, step.before, step.after) == ("older-series-for-python", "", after)
    assert step.requirements == ("numpy", "tables", after)


@given(st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,4}){0,2}", fullmatch=True), st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True),
       st.sampled_from(["-py2-none-any.whl", "-cp27-cp27mu-manylinux1_x86_64.whl", ".tar.gz", ".zip", ".tar.bz2"]))
def test_package_of__downloaded_file_names__name_and_version(name: str, version: str, tail: str) -> None:
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    got = piplock.package_of(f"{name}-{version}{tail}")
    assert got is not None and got[0] == canonicalize_name(name) and Version(got[1]) == Version(version)


@pytest.mark.parametrize("filename, expected", [
    ("functools32-3.2.3-2.tar.gz", ("functools32", "3.2.3.post2")),  # dqn-atari, corpus15 dev
    ("functools32-3.2.3-2.zip", ("functools32", "3.2.3.post2")),
    ("python-dateutil-2.8.2.tar.gz", ("python-dateutil", "2.8.2")),
    ("backports.functools_lru_cache-1.6.4.tar.gz", ("backports-functools-lru-cache", "1.6.4")),
    ("scikit-learn-0.20.4.tar.gz", ("scikit-learn", "0.20.4")),
    ("py-1.11.0.tar.gz", ("py", "1.11.0")),
    ("ale-python-interface-0.0.1.tar.gz", ("ale-python-interface", "0.0.1")),
])
def test_package_of__sdist_names_with_hyphens__name_and_version(filename: str, expected: tuple[str, str]) -> None:
    assert piplock.package_of(filename) == expected


def test_targets_pip__only_python_2() -> None:
    assert piplock.targets_pip("2.7") and not piplock.targets_pip("3.6") and not piplock.targets_pip("3.13")


@pytest.mark.integration
@pytest.mark.network
def test_python_27__real_pip_lock_virtualenv_build_and_import_check(tmp_path: Path, isolated_cache: Path) -> None:
    """From an empty cache: a Python 2 model's lock by pip (in a Python 2 environment of its own,
    whose setuptools fetches setup_requires through pip), its environment by virtualenv 20.21.1,
    and the import probe on Python 2 (six imports, a missing module is named the Python 2 way)."""
    from pyrepro.interpreters import find_python

    try:
        py2 = find_python("2.7")
    except Exception:
        pytest.skip("no CPython 2.7 here")
    from pyrepro.backends import local
    from pyrepro.paths import Paths

    d = _project(tmp_path, ["six==1.16.0"])
    out = lock.lock_request(lock.LockRequest("m", d, "2.7"), python_exe=py2, aarch64=False)
    assert out.category == 1 and lock.check_lock_dir(d) == [], out.message
    assert (isolated_cache / "tools" / f"py2-lock-{py2.parent.parent.name}" / ".pyrepro-complete").is_file()
    paths = Paths(root=tmp_path, cache=tmp_path / "cache")
    env = tmp_path / "env"
    local.make_venv(py2, "2.7", env, paths)
    pkgs = local.locked_packages(d / "pdm.lock", "2.7", "linux-x86_64")
    (tmp_path / "req.txt").write_text(local.requirements_text(pkgs))
    from pyrepro import proc

    proc.run([str(env / "bin" / "python"), "-m", "pip", "install", "--require-hashes", "--no-deps", "-r",
              str(tmp_path / "req.txt")], timeout=600)
    from pyrepro import run
    from pyrepro.run import _import_probe

    done = proc.run([str(env / "bin" / "python"), "-c", _import_probe(),
                     '{"modules": ["six", "no_such_mod"], "distributions": ["six"], "folders": {}}'], timeout=120)
    rows = __import__("json").loads(run.probe_result(done.stdout))
    assert ["six", "ok", ""] in rows and any(r[0] == "no_such_mod" and "No module named" in r[2] for r in rows)
    shutil.rmtree(env, ignore_errors=True)


GDAL_NEEDS_GDAL_CONFIG = """\
Collecting numpy==1.16.6
  Using cached numpy-1.16.6-cp27-cp27mu-manylinux1_x86_64.whl (17.0 MB)
Collecting GDAL
  Downloading GDAL-3.4.3.tar.gz (757 kB)
    ERROR: Command errored out with exit status 1:
     command: /env/bin/python -c 'import sys, setuptools ...' egg_info --egg-base /tmp/pip-pip-egg-info-x
         cwd: /tmp/pip-install-a/gdal/
    Complete output (12 lines):
    Traceback (most recent call last):
      File "/tmp/pip-install-a/gdal/setup.py", line 87, in fetch_config
        p = subprocess.Popen([command, args], stdout=subprocess.PIPE)
    OSError: [Errno 2] No such file or directory
    __main__.gdal_config_error: [Errno 2] No such file or directory
    ----------------------------------------
ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.
"""


def test_relax__pip_on_python_2__sdist_metadata_does_not_build__named_not_unknown() -> None:
    """predicting-poverty (corpus13 held): pip's Python 2 lock stops on GDAL's setup.py, which needs
    gdal-config from the system. That was diagnosed "unknown"; it is the sdist whose metadata did not
    build, with the setup.py's own last error line. A pip failure with no sdist stays unknown."""
    from pyrepro import relax

    problems = relax.diagnose(GDAL_NEEDS_GDAL_CONFIG)
    assert [(p.kind, p.package) for p in problems] == [("build-failed", "gdal")]
    assert "gdal 3.4.3: its setup.py failed while pip read its metadata" in problems[0].excerpt
    assert "gdal_config_error: [Errno 2] No such file or directory" in problems[0].excerpt
    assert problems[0].requirements == ("gdal==3.4.3",)
    plain = "Collecting numpy\nERROR: Command errored out with exit status 1: python setup.py egg_info\n"
    assert [p.kind for p in relax.diagnose(plain)] == ["unknown"]
