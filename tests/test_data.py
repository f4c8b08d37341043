"""Offline fixture data and the runtime helpers patched scripts import."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pyrepro import data
from pyrepro.cli import main
from pyrepro.errors import NetworkError

RUNTIME = Path(__file__).resolve().parent.parent / "pyrepro" / "runtime"


def _runtime():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("pyrepro_runtime_t", RUNTIME / "pyrepro_runtime.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_write_fixture__twice__same_bytes_and_digest(tmp_path: Path) -> None:
    a = data.write_fixture(tmp_path / "a")
    b = data.write_fixture(tmp_path / "b")
    assert a.digest == b.digest and a.kind == "fixture"
    for rel in a.files:
        assert (a.root / rel).read_bytes() == (b.root / rel).read_bytes()
    assert json.loads((a.root / "FIXTURE.json").read_text())["kind"] == "fixture"


def test_write_fixture__formats__as_jarvis_and_the_leaderboard_read_them(tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    for tag in data.DFT_3D_TAGS + data.CFID_3D_TAGS + tuple(data.CHEM_TAGS.values()):
        with zipfile.ZipFile(fx.data_dir / f"{tag}.zip") as z:
            assert z.namelist() == [tag]
            rows = json.loads(z.read(tag))
            assert isinstance(rows, list) and rows
    dft = json.loads(zipfile.ZipFile(fx.data_dir / "jdft_3d-12-12-2022.json.zip").read("jdft_3d-12-12-2022.json"))
    by_id = {r["jid"]: r for r in dft}
    for r in dft:
        a = r["atoms"]
        assert set(a) >= {"lattice_mat", "coords", "elements", "cartesian", "props"}
        assert len(a["coords"]) == len(a["elements"]) == len(a["props"])
    split = json.loads(zipfile.ZipFile(fx.benchmarks_dir / "dft_3d_exfoliation_energy.json.zip")
                       .read("dft_3d_exfoliation_energy.json"))
    assert {k: len(v) for k, v in split.items()} == {"train": 40, "val": 8, "test": 8}
    for part in split.values():
        for jid, target in part.items():
            assert by_id[jid]["exfoliation_energy"] == target
    cfid = json.loads(zipfile.ZipFile(fx.data_dir / "cfid_3d-8-18-2021.json.zip").read("cfid_3d-8-18-2021.json"))
    assert {r["jid"] for r in cfid} == set(by_id) and len(cfid[0]["desc"]) == data.CFID_LEN
    for ds, target in data.CHEM_TARGETS.items():
        b = json.loads(zipfile.ZipFile(fx.benchmarks_dir / f"{ds}_{target}.json.zip").read(f"{ds}_{target}.json"))
        rows = {str(r["id"]): r for r in json.loads(zipfile.ZipFile(fx.data_dir / f"{ds}.json.zip").read(f"{ds}.json"))}
        assert set(b) == {"train", "test"} and len(b["test"]) == 8
        assert all(rows[i][target] == v and rows[i]["formula"] for i, v in b["test"].items())


def test_fixture_cli__json__reports_digest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "fixture", "--out", str(tmp_path / "fx"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "fixture" and out["digest"].startswith("sha256:")


def test_fetch_real__offline__network_error_names_host(tmp_path: Path) -> None:
    def down(url: str, dest: Path) -> None:
        raise OSError("Name or service not known")

    with pytest.raises(NetworkError) as e:
        data.fetch_real("ssub", tmp_path, downloader=down)
    assert "figshare.com" in str(e.value) and not list(tmp_path.iterdir())


def test_runtime__uniform_args__env_defaults_and_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime()
    monkeypatch.setenv("PYREPRO_BENCHMARKS_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("PYREPRO_DATA_DIR", str(tmp_path / "d"))
    ns = rt.parse_uniform_args("dft_3d_exfoliation_energy", ["--test", "--output-dir", str(tmp_path / "o")])
    assert ns.test and ns.benchmark == "dft_3d_exfoliation_energy"
    assert ns.benchmarks_dir == str(tmp_path / "b") and (tmp_path / "o").is_dir() and (tmp_path / "d").is_dir()


@pytest.mark.parametrize(("bench", "split"), [
    ("dft_3d_exfoliation_energy", ("dft_3d", "exfoliation_energy")),
    ("ssub_formula_energy", ("ssub", "formula_energy")),
    ("supercon_chem_Tc", ("supercon_chem", "Tc")),
    ("mag2d_chem_magnetic_moment", ("mag2d_chem", "magnetic_moment")),
    ("dft_3d_n-Seebeck", ("dft_3d", "n-Seebeck")),
])
def test_runtime__split_and_names(bench: str, split: tuple[str, str]) -> None:
    rt = _runtime()
    assert rt.split_benchmark(bench) == split
    assert rt.predictions_name(bench) == f"AI-SinglePropertyPrediction-{split[1]}-{split[0]}-test-mae"


def test_runtime__write_predictions__leaderboard_zip(tmp_path: Path) -> None:
    rt = _runtime()
    p = rt.write_predictions(str(tmp_path), "dft_3d_exfoliation_energy", [("JVASP-1", 1.5), ("JVASP-2", 2.0)])
    name = "AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae"
    assert Path(p).name == name + ".csv.zip"
    assert zipfile.ZipFile(p).read(name + ".csv").decode() == "id,prediction\nJVASP-1,1.5\nJVASP-2,2.0\n"


def test_runtime__load_benchmark__missing_names_dir(tmp_path: Path) -> None:
    rt = _runtime()
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        rt.load_benchmark(str(tmp_path), "dft_3d_exfoliation_energy")


def test_sitecustomize__fake_jarvis__store_dir_defaults_to_data_dir(tmp_path: Path) -> None:
    pkg = tmp_path / "site" / "jarvis" / "db"
    pkg.mkdir(parents=True)
    (tmp_path / "site" / "jarvis" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "figshare.py").write_text(
        "def get_request_data(js_tag='x', url='u', store_dir=None):\n    return store_dir\n"
        "def data(dataset='dft_2d', store_dir=None):\n    return get_request_data(js_tag=dataset, store_dir=store_dir)\n")
    code = ("from jarvis.db.figshare import data, get_request_data\n"
            "print(data('dft_3d')); print(data('dft_3d', '/explicit')); print(get_request_data('a', 'b'))")
    env = {"PYTHONPATH": f"{RUNTIME}:{tmp_path / 'site'}", "PYREPRO_DATA_DIR": str(tmp_path / "dd"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(tmp_path / "dd"), "/explicit", str(tmp_path / "dd")]
    # without jarvis installed, start-up is unaffected
    env2 = {"PYTHONPATH": str(RUNTIME), "PYREPRO_DATA_DIR": str(tmp_path / "dd"), "PATH": "/usr/bin:/bin"}
    assert subprocess.run([sys.executable, "-c", "print(1)"], env=env2, capture_output=True, text=True).stdout == "1\n"
