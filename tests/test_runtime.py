"""pyrepro/runtime: the helpers patched scripts import, and the store_dir sitecustomize.

Unit tests load the runtime files straight from the folder (as model envs do, via PYTHONPATH).
Integration tests need interpreters with jarvis-tools installed: every interpreter listed
(os.pathsep-separated) in $PYREPRO_TEST_JARVIS_PYTHON, plus the test interpreter itself when it
can import jarvis. They skip when there is none.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pyrepro import data

RUNTIME = Path(__file__).resolve().parent.parent / "pyrepro" / "runtime"
BASE_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def _runtime() -> Any:
    spec = importlib.util.spec_from_file_location("pyrepro_runtime_t", RUNTIME / "pyrepro_runtime.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _jarvis_pythons() -> list[str]:
    found = [p for p in os.environ.get("PYREPRO_TEST_JARVIS_PYTHON", "").split(os.pathsep) if p]
    if importlib.util.find_spec("jarvis") is not None:
        found.append(sys.executable)
    return found


JARVIS_PYTHONS = _jarvis_pythons()
jarvis_python = pytest.mark.parametrize(
    "py", JARVIS_PYTHONS or [pytest.param("", marks=pytest.mark.skip(
        reason="no interpreter with jarvis-tools (set PYREPRO_TEST_JARVIS_PYTHON)"))])


def _run(py: str, code: str, env: dict[str, str], cwd: Path | None = None) -> str:
    r = subprocess.run([py, "-c", code], env={**BASE_ENV, **env}, capture_output=True, text=True,
                       cwd=cwd, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


# ---- unit: argument parsing, names, files ------------------------------------------

def test_parse_uniform_args__env_defaults__absolute_dirs_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime()
    monkeypatch.setenv("PYREPRO_BENCHMARKS_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("PYREPRO_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("PYREPRO_DATA_KIND", "fixture")
    monkeypatch.chdir(tmp_path)
    ns = rt.parse_uniform_args("dft_3d_exfoliation_energy", ["--test", "--output-dir", "o"])
    assert ns.test and ns.benchmark == "dft_3d_exfoliation_energy" and ns.data_kind == "fixture"
    assert ns.benchmarks_dir == str(tmp_path / "b") and ns.data_dir == str(tmp_path / "d")
    assert ns.output_dir == str(tmp_path / "o") and (tmp_path / "o").is_dir() and (tmp_path / "d").is_dir()


def test_parse_uniform_args__flags_override_env__flag_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime()
    monkeypatch.setenv("PYREPRO_BENCHMARKS_DIR", "/nonexistent-env")
    ns = rt.parse_uniform_args("x_y", ["--benchmark", "ssub_formula_energy", "--benchmarks-dir", str(tmp_path),
                                        "--data-dir", str(tmp_path / "d"), "--output-dir", str(tmp_path / "o")])
    assert (ns.benchmark, ns.test, ns.benchmarks_dir) == ("ssub_formula_energy", False, str(tmp_path))


def test_parse_uniform_args__no_benchmarks_dir__usage_error(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    rt = _runtime()
    monkeypatch.delenv("PYREPRO_BENCHMARKS_DIR", raising=False)
    with pytest.raises(SystemExit) as e:
        rt.parse_uniform_args("dft_3d_exfoliation_energy", [])
    assert e.value.code == 2 and "PYREPRO_BENCHMARKS_DIR" in capsys.readouterr().err


def test_parse_known_uniform_args__extra_flags__returned_as_rest(tmp_path: Path) -> None:
    rt = _runtime()
    ns, rest = rt.parse_known_uniform_args("dft_3d_exfoliation_energy",
                                           ["--benchmarks-dir", str(tmp_path), "--epochs", "3", "--test"])
    assert ns.test and rest == ["--epochs", "3"]


def test_add_uniform_args__existing_parser__keeps_own_flags() -> None:
    import argparse

    rt = _runtime()
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=5)
    rt.add_uniform_args(p, "ssub_formula_energy")
    ns = p.parse_args(["--epochs", "2"])
    assert ns.epochs == 2 and ns.benchmark == "ssub_formula_energy" and ns.test is False


@pytest.mark.parametrize(("bench", "split"), [
    ("dft_3d_exfoliation_energy", ("dft_3d", "exfoliation_energy")),
    ("ssub_formula_energy", ("ssub", "formula_energy")),
    ("supercon_chem_Tc", ("supercon_chem", "Tc")),
    ("mag2d_chem_magnetic_moment", ("mag2d_chem", "magnetic_moment")),
    ("dft_3d_n-Seebeck", ("dft_3d", "n-Seebeck")),
    ("dft_3d_2021_formation_energy_peratom", ("dft_3d_2021", "formation_energy_peratom")),
    ("qe_tb_indir_gap", ("qe_tb", "indir_gap")),
])
def test_split_benchmark__known_prefixes__longest_wins(bench: str, split: tuple[str, str]) -> None:
    rt = _runtime()
    assert rt.split_benchmark(bench) == split
    assert rt.predictions_name(bench) == f"AI-SinglePropertyPrediction-{split[1]}-{split[0]}-test-mae"


def test_split_benchmark__unknown_dataset__value_error_lists_known() -> None:
    with pytest.raises(ValueError, match="known datasets: dft_3d"):
        _runtime().split_benchmark("nosuchset_prop")


def test_write_predictions__tuples__leaderboard_zip(tmp_path: Path) -> None:
    rt = _runtime()
    p = rt.write_predictions(str(tmp_path / "new"), "dft_3d_exfoliation_energy", [("JVASP-1", 1.5), ("JVASP-2", 2.0)])
    name = "AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae"
    assert Path(p) == tmp_path / "new" / (name + ".csv.zip")
    with zipfile.ZipFile(p) as z:
        assert z.namelist() == [name + ".csv"]
        assert z.read(name + ".csv").decode() == "id,prediction\nJVASP-1,1.5\nJVASP-2,2.0\n"
    assert sorted(os.listdir(tmp_path / "new")) == [name + ".csv.zip"]


def test_write_predictions__same_rows_later__byte_identical_archive(tmp_path: Path) -> None:
    import time

    rt = _runtime()
    rows = [("JVASP-1", 1.5), ("JVASP-2", 2.0)]
    a = Path(rt.write_predictions(str(tmp_path / "a"), "dft_3d_exfoliation_energy", rows)).read_bytes()
    time.sleep(2.1)  # zip timestamps have 2 s resolution
    b = Path(rt.write_predictions(str(tmp_path / "b"), "dft_3d_exfoliation_energy", rows)).read_bytes()
    assert a == b


def test_write_predictions__dataframe_like__uses_its_columns(tmp_path: Path) -> None:
    rt = _runtime()

    class Frame:  # the two attributes write_predictions uses from a pandas DataFrame
        columns = ("id", "target", "prediction")

        def itertuples(self, index: bool = True, name: str | None = "P") -> list[tuple[Any, ...]]:
            assert index is False and name is None
            return [("1228", -0.5, -0.4)]

    p = rt.write_predictions(str(tmp_path), "ssub_formula_energy", Frame())
    with zipfile.ZipFile(p) as z:
        text = z.read("AI-SinglePropertyPrediction-formula_energy-ssub-test-mae.csv").decode()
    assert text == "id,target,prediction\n1228,-0.5,-0.4\n"


def test_load_benchmark__fixture__splits_and_missing_val_defaulted(tmp_path: Path) -> None:
    rt = _runtime()
    fx = data.write_fixture(tmp_path / "fx")
    b = rt.load_benchmark(str(fx.benchmarks_dir), "dft_3d_exfoliation_energy")
    assert {k: len(v) for k, v in b.items()} == {"train": 48, "val": 6, "test": 6}
    c = rt.load_benchmark(str(fx.benchmarks_dir), "supercon_chem_Tc")
    assert c["val"] == {} and len(c["test"]) == 8


def test_load_benchmark__missing_file__names_dir_and_flag(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"dft_3d_exfoliation_energy\.json\.zip.*--benchmarks-dir") as e:
        _runtime().load_benchmark(str(tmp_path), "dft_3d_exfoliation_energy")
    assert str(tmp_path) in str(e.value)


def test_test_scale__both_modes__selects_value() -> None:
    rt = _runtime()
    assert rt.test_scale(1170, 10, True) == 10 and rt.test_scale(1170, 10, False) == 1170


def test_runtime__import__stdlib_only_py38_syntax() -> None:
    import ast

    for f in ("pyrepro_runtime.py", "sitecustomize.py"):
        tree = ast.parse((RUNTIME / f).read_text(), feature_version=(3, 8))
        top = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        top |= {n.module.split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        assert top <= set(sys.stdlib_module_names), (f, top - set(sys.stdlib_module_names))


# ---- unit: store_dir on old and new jarvis-tools signatures ---------------------------

_FAKE_DB = ("def get_db_info():\n"
            "    return {'dft_3d': ['https://example.invalid/files/1', 'jdft_3d-8-18-2021.json', 'msg', 'ref']}\n")
_FAKE_NEW = _FAKE_DB + (
    "def get_request_data(js_tag='x', url='u', store_dir=None):\n"
    "    calls.append((js_tag, url, store_dir))\n    return store_dir\n"
    "def data(dataset='dft_2d', store_dir=None):\n    info = get_db_info()[dataset]\n"
    "    return get_request_data(js_tag=info[1], url=info[0], store_dir=store_dir)\n")
_FAKE_OLD = _FAKE_DB + (  # jarvis-tools 2022.9.16: no store_dir anywhere
    "def get_request_data(js_tag='x', url='u'):\n"
    "    calls.append((js_tag, url, 'package-folder'))\n    return 'package-folder'\n"
    "def data(dataset='dft_2d'):\n    info = get_db_info()[dataset]\n"
    "    return get_request_data(js_tag=info[1], url=info[0])\n")


def _fake_figshare(new: bool, calls: list[Any]) -> Any:
    m = types.ModuleType("fake_figshare")
    m.__dict__["calls"] = calls
    exec(_FAKE_NEW if new else _FAKE_OLD, m.__dict__)
    return m


def test_install_store_dir__new_signature__default_only_when_absent(tmp_path: Path) -> None:
    rt = _runtime()
    calls: list[Any] = []
    m = rt.install_store_dir(_fake_figshare(True, calls), str(tmp_path / "store"))
    assert m.data("dft_3d") == str(tmp_path / "store")
    assert m.data("dft_3d", "/explicit") == "/explicit"
    assert m.get_request_data("a", "b", "/pos") == "/pos"
    assert m.get_request_data(js_tag="a", url="b") == str(tmp_path / "store")
    assert rt.install_store_dir(m) is m and m.data("dft_3d") == str(tmp_path / "store")  # idempotent
    rt.install_store_dir(m, "/other")  # a later explicit default (e.g. --data-dir) replaces the env one
    assert m.data("dft_3d") == "/other" and len(calls) == 6


def test_install_store_dir__old_signature__reads_zip_from_store(tmp_path: Path) -> None:
    rt = _runtime()
    calls: list[Any] = []
    store = tmp_path / "store"
    store.mkdir()
    with zipfile.ZipFile(store / "jdft_3d-8-18-2021.json.zip", "w") as z:
        z.writestr("jdft_3d-8-18-2021.json", json.dumps([{"jid": "JVASP-1"}]))
    m = rt.install_store_dir(_fake_figshare(False, calls), str(store))
    assert m.data("dft_3d") == [{"jid": "JVASP-1"}]
    assert m.data("dft_3d", store_dir=str(store)) == [{"jid": "JVASP-1"}]
    assert calls == []  # the original (package folder, network) was never used
    with pytest.raises(ValueError, match="Check DB name"):
        m.data("nope")


def test_install_store_dir__old_signature_no_store__original_behaviour() -> None:
    rt = _runtime()
    calls: list[Any] = []
    m = rt.install_store_dir(_fake_figshare(False, calls))
    assert m.data("dft_3d") == "package-folder" and calls


def test_read_jarvis_zip__missing_offline__error_names_file_url_and_leaves_nothing(tmp_path: Path) -> None:
    rt = _runtime()
    with pytest.raises(OSError, match=r"ssub\.json\.zip is not in .*http://127\.0\.0\.1:9/ssub"):
        rt.read_jarvis_zip("ssub.json", "http://127.0.0.1:9/ssub", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


# ---- unit: sitecustomize in a fresh interpreter ----------------------------------------

def _fake_jarvis(root: Path, new: bool) -> Path:
    pkg = root / "jarvis" / "db"
    pkg.mkdir(parents=True)
    (root / "jarvis" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    if new:
        src = ("def get_request_data(js_tag='x', url='u', store_dir=None):\n    return store_dir\n"
               "def data(dataset='dft_2d', store_dir=None):\n    return get_request_data(js_tag=dataset, store_dir=store_dir)\n")
    else:
        src = ("def get_db_info():\n    return {'dft_3d': ['http://127.0.0.1:9/x', 'tag.json', 'm', 'r']}\n"
               "def get_request_data(js_tag='x', url='u'):\n    return 'package-folder'\n"
               "def data(dataset='dft_2d'):\n    return get_request_data(js_tag=dataset, url='u')\n")
    (pkg / "figshare.py").write_text(src)
    return root


def test_sitecustomize__fake_new_jarvis__store_dir_defaults_to_data_dir(tmp_path: Path) -> None:
    site = _fake_jarvis(tmp_path / "site", new=True)
    code = ("from jarvis.db.figshare import data, get_request_data\n"
            "print(data('dft_3d')); print(data('dft_3d', '/explicit')); print(get_request_data('a', 'b'))")
    env = {"PYTHONPATH": f"{RUNTIME}{os.pathsep}{site}", "PYREPRO_DATA_DIR": str(tmp_path / "dd")}
    assert _run(sys.executable, code, env).split() == [str(tmp_path / "dd"), "/explicit", str(tmp_path / "dd")]


def test_sitecustomize__fake_old_jarvis__reads_data_dir_not_package(tmp_path: Path) -> None:
    site = _fake_jarvis(tmp_path / "site", new=False)
    dd = tmp_path / "dd"
    dd.mkdir()
    with zipfile.ZipFile(dd / "tag.json.zip", "w") as z:
        z.writestr("tag.json", '["from-data-dir"]')
    code = "import jarvis.db.figshare as f\nprint(f.data('dft_3d')[0])"
    env = {"PYTHONPATH": f"{RUNTIME}{os.pathsep}{site}", "PYREPRO_DATA_DIR": str(dd)}
    assert _run(sys.executable, code, env).split()[-1] == "from-data-dir"


def test_sitecustomize__no_jarvis_or_no_env__startup_unaffected(tmp_path: Path) -> None:
    for env in ({"PYTHONPATH": str(RUNTIME), "PYREPRO_DATA_DIR": str(tmp_path / "dd")},
                {"PYTHONPATH": str(RUNTIME)}):
        r = subprocess.run([sys.executable, "-c", "import sitecustomize, sys; print(sitecustomize.__file__)"],
                           env={**BASE_ENV, **env}, capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "" and r.stdout.strip() == str(RUNTIME / "sitecustomize.py")


def test_sitecustomize__shadowed_sitecustomize__chained(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    env = {"PYTHONPATH": f"{RUNTIME}{os.pathsep}{other}", "PYREPRO_DATA_DIR": str(tmp_path / "dd")}
    assert _run(sys.executable, "import os; print(os.environ.get('CHAINED'))", env).strip() == "yes"


# ---- integration: real jarvis-tools on the fixture -----------------------------------

@pytest.mark.integration
@jarvis_python
def test_fixture__real_jarvis__every_dataset_loads_and_atoms_parse(py: str, tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    code = f"""
import sys, json
sys.path.insert(0, {str(RUNTIME)!r})
import pyrepro_runtime as rt
import jarvis
from jarvis.core.atoms import Atoms
from jarvis.ai.descriptors.elemental import get_element_fraction_desc
dd = {str(fx.data_dir)!r}
out = {{"version": jarvis.__version__}}
dft = rt.jarvis_data("dft_3d", dd)
out["dft_3d"] = len(dft)
out["atoms"] = sum(Atoms.from_dict(e["atoms"]).num_atoms > 0 for e in dft)
out["cfid_3d"] = len(rt.jarvis_data("cfid_3d", dd))
for tag, url in (("ssub.json", "https://figshare.com/ndownloader/files/40084921"),
                 ("supercon_chem.json", "https://figshare.com/ndownloader/files/40719260"),
                 ("mag2d_chem.json", "https://figshare.com/ndownloader/files/40720004")):
    rows = rt.jarvis_request_data(tag, url, dd)
    out[tag] = [len(rows), sum(len(get_element_fraction_desc(r["formula"])) > 0 for r in rows)]
try:
    import jarvis.db.figshare as f
    if "dft_3d_2021" in f.get_db_info():
        out["dft_3d_2021"] = len(rt.jarvis_data("dft_3d_2021", dd))
except Exception as exc:
    out["err"] = repr(exc)
print(json.dumps(out))
"""
    out = json.loads(_run(py, code, {}, cwd=tmp_path).strip().splitlines()[-1])
    n = len(data.dft_3d_entries())
    assert out["dft_3d"] == out["atoms"] == out["cfid_3d"] == n, out
    for tag in ("ssub.json", "supercon_chem.json", "mag2d_chem.json"):
        assert out[tag][0] == out[tag][1] > 0, out
    assert "err" not in out and out.get("dft_3d_2021", n) == n


@pytest.mark.integration
@jarvis_python
def test_populate_folder__real_jarvis__leaderboard_layout(py: str, tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    code = f"""
import sys, json
sys.path.insert(0, {str(RUNTIME)!r})
import pyrepro_runtime as rt
from jarvis.core.atoms import Atoms
counts = rt.populate_folder("dft_3d_exfoliation_energy", {str(fx.benchmarks_dir)!r}, {str(fx.data_dir)!r}, "Out")
rt.populate_folder("dft_3d_exfoliation_energy", {str(fx.benchmarks_dir)!r}, {str(fx.data_dir)!r}, "OutCif", file_format="cif")
import csv
ok = 0
for row in csv.reader(open("Out/id_prop.csv")):
    ok += Atoms.from_poscar("Out/" + row[0]).num_atoms > 0
print(json.dumps({{"counts": counts, "ok": ok}}))
"""
    out = json.loads(_run(py, code, {}, cwd=tmp_path).strip().splitlines()[-1])
    assert out["counts"] == {"train": 48, "val": 6, "test": 6} and out["ok"] == 60
    split = json.loads(zipfile.ZipFile(fx.benchmarks_dir / "dft_3d_exfoliation_energy.json.zip")
                       .read("dft_3d_exfoliation_energy.json"))
    rows = list(csv.reader((tmp_path / "Out" / "id_prop.csv").open()))
    expected = [[i, str(v)] for part in ("train", "val", "test") for i, v in split[part].items()]
    assert rows == expected
    info = json.loads((tmp_path / "Out" / "dataset_info.json").read_text())
    assert info == {"benchmark_file": "AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae",
                    "dataset": "dft_3d", "output_path": "Out", "prop": "exfoliation_energy", "methods": "AI",
                    "id_tag": "jid", "n_train": 40, "n_val": 8, "n_test": 8}
    assert len(list((tmp_path / "OutCif").glob("*.cif"))) == 56


@pytest.mark.integration
@jarvis_python
def test_populate_folder__id_missing_from_dataset__key_error_names_dir(py: str, tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    bdir = tmp_path / "b"
    bdir.mkdir()
    with zipfile.ZipFile(bdir / "dft_3d_exfoliation_energy.json.zip", "w") as z:
        z.writestr("dft_3d_exfoliation_energy.json", json.dumps({"train": {"JVASP-NOPE": 1.0}, "test": {}}))
    code = f"""
import sys
sys.path.insert(0, {str(RUNTIME)!r})
import pyrepro_runtime as rt
try:
    rt.populate_folder("dft_3d_exfoliation_energy", {str(bdir)!r}, {str(fx.data_dir)!r}, "Out")
except KeyError as e:
    print("KEYERROR", e)
"""
    out = _run(py, code, {}, cwd=tmp_path)
    assert "KEYERROR" in out and "JVASP-NOPE" in out and str(fx.data_dir) in out


@pytest.mark.integration
@jarvis_python
def test_sitecustomize__real_jarvis__library_calls_read_data_dir_offline(py: str, tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    code = ("from jarvis.db.figshare import data, get_request_data\n"
            "print(len(data('dft_3d')), len(data('cfid_3d')),\n"
            "      len(get_request_data(js_tag='ssub.json', url='https://figshare.com/ndownloader/files/40084921')))")
    env = {"PYTHONPATH": str(RUNTIME), "PYREPRO_DATA_DIR": str(fx.data_dir),
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    n = len(data.dft_3d_entries())
    assert _run(py, code, env, cwd=tmp_path).split()[-3:] == [str(n), str(n), str(len(data.chem_entries("ssub")))]
