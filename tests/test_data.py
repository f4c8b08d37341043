"""Offline fixture data and the runtime helpers patched scripts import."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from pyrepro import data
from pyrepro.cli import main
from pyrepro.errors import NetworkError
from tests.fakes import json_result


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
    assert {k: len(v) for k, v in split.items()} == {"train": 48, "val": 6, "test": 6}
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
    out = json_result(capsys.readouterr().out)
    assert out["kind"] == "fixture" and out["digest"].startswith("sha256:")


def test_fetch_real__offline__network_error_names_host(tmp_path: Path) -> None:
    def down(url: str, dest: Path) -> None:
        raise OSError("Name or service not known")

    with pytest.raises(NetworkError) as e:
        data.fetch_real("ssub", tmp_path, downloader=down)
    assert "figshare.com" in str(e.value) and not list(tmp_path.iterdir())


def test_write_fixture__manifest__digest_recomputes_and_lists_every_file(tmp_path: Path) -> None:
    import hashlib

    fx = data.write_fixture(tmp_path / "fx")
    manifest = json.loads((fx.root / "FIXTURE.json").read_text())
    h = hashlib.sha256()
    for rel in sorted(manifest["files"]):
        content = (fx.root / rel).read_bytes()
        assert hashlib.sha256(content).hexdigest() == manifest["files"][rel]
        h.update(rel.encode() + b"\0" + hashlib.sha256(content).digest())
    assert manifest["digest"] == fx.digest == "sha256:" + h.hexdigest()
    assert manifest["version"] == data.FIXTURE_VERSION and "never a numerical result" in manifest["note"]
    on_disk = sorted(str(p.relative_to(fx.root)) for p in fx.root.rglob("*") if p.is_file())
    assert on_disk == sorted([*fx.files, "FIXTURE.json"])


def test_write_fixture__zip_entries__stored_fixed_date_portable(tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    for rel in fx.files:
        with zipfile.ZipFile(fx.root / rel) as z:
            (info,) = z.infolist()
            assert (info.date_time, info.compress_type, info.create_system) == (data.ZIP_DATE, zipfile.ZIP_STORED, 3)


def test_write_fixture__existing_same_or_damaged__kept_or_replaced(tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    marker = fx.root / "data" / "extra"
    marker.write_text("kept when the digest matches")
    assert data.write_fixture(tmp_path / "fx").digest == fx.digest and marker.exists()
    (fx.root / "FIXTURE.json").write_text("{broken")
    again = data.write_fixture(tmp_path / "fx")
    assert again.digest == fx.digest and not marker.exists()
    assert json.loads((fx.root / "FIXTURE.json").read_text())["digest"] == fx.digest
    assert [p.name for p in tmp_path.iterdir()] == ["fx"]  # no temp or .old folders left


def test_write_fixture__dft_entries__fields_the_scripts_read(tmp_path: Path) -> None:
    fx = data.write_fixture(tmp_path / "fx")
    tag = "jdft_3d-8-18-2021.json"
    rows = json.loads(zipfile.ZipFile(fx.data_dir / f"{tag}.zip").read(tag))
    for r in rows:
        assert r["jid"].startswith("JVASP-FX") and r["fixture"] is True
        assert set(data.DFT_3D_FIELDS) <= set(r)
        lat = r["atoms"]["lattice_mat"]
        assert len(lat) == 3 and all(len(v) == 3 for v in lat) and r["atoms"]["cartesian"] is False
    layered = [r for r in rows if r["prototype"] in data.LAYERED]
    assert layered and all(r["exfoliation_energy"] != "na" for r in layered)
    assert any(r["exfoliation_energy"] == "na" for r in rows)  # like the real data
    assert len({r["jid"] for r in rows}) == len(rows)


def test_fixture_cli__text__labels_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "fixture", "--out", str(tmp_path / "fx")]) == 0
    assert "never a numerical result" in capsys.readouterr().out


def test_real_datasets__toml__names_files_and_unknown_hashes_are_none() -> None:
    ds = {d.name: d for d in data.real_datasets()}
    assert {"dft_3d", "dft_3d_2021", "cfid_3d", "ssub", "supercon_chem", "mag2d_chem"} <= set(ds)
    assert ds["dft_3d"].file == "jdft_3d-12-12-2022.json.zip" and ds["dft_3d_2021"].file == "jdft_3d-8-18-2021.json.zip"
    for tag, d in (("ssub.json", ds["ssub"]), ("supercon_chem.json", ds["supercon_chem"]), ("mag2d_chem.json", ds["mag2d_chem"])):
        assert d.file == tag + ".zip" and d.url.endswith("/" + d.figshare)
    assert all(d.sha256 is None or len(d.sha256) == 64 for d in ds.values())
    # every fixture dataset file is one of the real file names
    assert {f"{t}.zip" for t in data.DFT_3D_TAGS + data.CFID_3D_TAGS + tuple(data.CHEM_TAGS.values())} <= {d.file for d in ds.values()}


@pytest.mark.upstream
def test_benchmark_pins__upstream__hashes_match_mirror(upstream: Path) -> None:
    import hashlib

    folder = upstream / "jarvis_leaderboard" / "jarvis_leaderboard" / "benchmarks" / "AI" / "SinglePropertyPrediction"
    pins = data.benchmark_pins()
    assert {p.name for p in pins} == {"dft_3d_exfoliation_energy", "ssub_formula_energy", "supercon_chem_Tc",
                                      "mag2d_chem_magnetic_moment"}
    for p in pins:
        assert hashlib.sha256((folder / f"{p.name}.json.zip").read_bytes()).hexdigest() == p.sha256


@pytest.mark.upstream
def test_write_fixture__upstream_benchmarks__same_zip_and_json_shape(upstream: Path, tmp_path: Path) -> None:
    folder = upstream / "jarvis_leaderboard" / "jarvis_leaderboard" / "benchmarks" / "AI" / "SinglePropertyPrediction"
    fx = data.write_fixture(tmp_path / "fx")
    for p in data.benchmark_pins():
        real = zipfile.ZipFile(folder / f"{p.name}.json.zip")
        ours = zipfile.ZipFile(fx.benchmarks_dir / f"{p.name}.json.zip")
        assert real.namelist() == ours.namelist()
        r, o = (json.loads(z.read(z.namelist()[0])) for z in (real, ours))
        assert set(r) == set(o)
        for part in r:
            rk, rv = next(iter(r[part].items()))
            ok, ov = next(iter(o[part].items()))
            assert (type(rk) is type(ok) and isinstance(ov, type(rv))) or isinstance(ov, float)
            assert rk.isdigit() == ok.isdigit()


def _fake_download(content: bytes):  # type: ignore[no-untyped-def]
    def down(url: str, dest: Path) -> None:
        dest.write_bytes(content)
    return down


def test_fetch_real__unpinned__hash_recorded_in_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    got = data.fetch_real("mag2d_chem", tmp_path, downloader=_fake_download(b"zipbytes"))
    assert got.path == tmp_path / "mag2d_chem.json.zip" and got.path.read_bytes() == b"zipbytes"
    assert got.sha256 == hashlib.sha256(b"zipbytes").hexdigest() and got.size == 8 and got.pinned is False
    manifest = json.loads((tmp_path / data.FETCHED_MANIFEST).read_text())
    assert manifest["mag2d_chem.json.zip"]["sha256"] == got.sha256
    assert manifest["mag2d_chem.json.zip"]["url"].endswith("/40720004")
    data.fetch_real("ssub", tmp_path, downloader=_fake_download(b"other"))
    assert set(json.loads((tmp_path / data.FETCHED_MANIFEST).read_text())) == {"mag2d_chem.json.zip", "ssub.json.zip"}


def test_fetch_real__pinned_mismatch__integrity_error_nothing_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrepro.errors import IntegrityError

    real = data.real_datasets()
    pinned = tuple(data.RealDataset(**{**d.__dict__, "sha256": "0" * 64}) if d.name == "ssub" else d for d in real)
    monkeypatch.setattr(data, "real_datasets", lambda: pinned)
    with pytest.raises(IntegrityError, match="0000"):
        data.fetch_real("ssub", tmp_path, downloader=_fake_download(b"tampered"))
    assert list(tmp_path.iterdir()) == []


def test_fetch_real__unknown_name__not_found_lists_known(tmp_path: Path) -> None:
    from pyrepro.errors import NotFoundError

    with pytest.raises(NotFoundError, match="known: dft_3d"):
        data.fetch_real("nope", tmp_path, downloader=_fake_download(b""))


def test_data_cli__list_json__datasets_and_benchmark_pins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "list", "--json"]) == 0
    out = json_result(capsys.readouterr().out)
    names = [d["name"] for d in out["datasets"]]
    assert "cfid_3d" in names and all(set(d) >= {"file", "url", "figshare", "sha256"} for d in out["datasets"])
    assert {b["name"] for b in out["benchmarks"]} >= {"dft_3d_exfoliation_energy"}


def test_data_cli__fetch_offline__network_error_exit_and_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro.errors import exit_code_for

    def offline(url: str, dest: Path) -> None:
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(data, "_urllib_download", offline)
    code = main(["data", "fetch", "cfid_3d", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == exit_code_for(NetworkError("x")) != 0
    assert "ndownloader.figshare.com" in err and "cfid_3d-8-18-2021.json.zip" in err
    assert list(tmp_path.iterdir()) == []


def test_data_cli__fetch_json__reports_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(data, "_urllib_download", _fake_download(b"abc"))
    assert main(["data", "fetch", "ssub", "--out", str(tmp_path), "--json"]) == 0
    out = json_result(capsys.readouterr().out)
    assert out["sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" and out["pinned"] is False


def test_write_fixture__concurrent_writers__one_valid_folder_no_leftovers(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "stale").write_text("an older fixture")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: data.write_fixture(tmp_path / "fx"), range(4)))
    assert len({r.digest for r in results}) == 1
    assert json.loads((tmp_path / "fx" / "FIXTURE.json").read_text())["digest"] == results[0].digest
    assert not (tmp_path / "fx" / "stale").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["fx"]


def test_seed_split__same_permutation_as_cgcnn_and_alignn() -> None:
    """cgcnn shuffles its id_prop rows with random.seed(123) and takes the last 10% as test;
    ALIGNN's get_id_train_val_test does the same. The fixture benchmark must equal that."""
    import random

    ids = [f"id{i}" for i in range(60)]
    rows = list(ids)
    random.seed(123)
    random.shuffle(rows)
    n_test = int(0.1 * len(rows))
    split = data.seed_split(ids)
    assert split["test"] == rows[-n_test:] and split["train"] == rows[:int(0.8 * len(rows))]
    assert len(set(split["train"]) | set(split["val"]) | set(split["test"])) == 60


def test_write_fixture__a_target_changed_on_disk__rewritten_digest_measured(tmp_path: Path) -> None:
    from pyrepro import data as data_mod

    fx = data_mod.write_fixture(tmp_path / "fx")
    bench = fx.benchmarks_dir / "dft_3d_exfoliation_energy.json.zip"
    good = bench.read_bytes()
    bench.write_bytes(good[:-8] + b"tampered")  # a changed file under the same FIXTURE.json
    assert data_mod.measured_digest(fx.root, fx.files) != fx.digest
    again = data_mod.write_fixture(tmp_path / "fx")
    assert bench.read_bytes() == good and again.digest == fx.digest
    assert data_mod.measured_digest(again.root, again.files) == again.digest
