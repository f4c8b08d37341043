"""Offline fixture data and the runtime helpers patched scripts import."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from pyrepro import data
from pyrepro.cli import main
from pyrepro.errors import NetworkError


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
