"""Datasets: an offline, deterministic fixture in the real file formats, and the real pins.

figshare (where jarvis-tools gets its datasets) is unreachable from here and from many
clusters, so test mode runs on a small fixture that pyrepro writes itself:

* jarvis-tools dataset zips exactly as ``jarvis.db.figshare.get_request_data`` reads them:
  ``<data_dir>/<js_tag>.zip`` holding one member ``<js_tag>`` (a json list of dicts). Every
  ``dft_3d`` file name a locked jarvis-tools version may ask for is written (the mapping
  drifted: 2021 55k file, 12-12-2022 76k file, 9-24-2025 file), plus ``cfid_3d`` (CFID
  ``desc`` vectors) and ElemNet1's ``ssub``, ``supercon_chem`` and ``mag2d_chem``.
* benchmark json zips in the upstream format (``<benchmark>.json.zip`` with member
  ``<benchmark>.json`` = ``{"train": {id: target}, "val": ..., "test": ...}``).

Crystal structures are built from a table of real prototype structures (diamond Si, rocksalt,
zincblende, graphite, 2H-MoS2, hBN, fcc/bcc metals, perovskite, wurtzite...) with
deterministic element substitutions and lattice scalings. Targets are deterministic
functions of composition and structure, so models can fit them, but they are not physics:
**fixture data proves executability, never a numerical result.** Every file is labelled by a
``FIXTURE.json`` manifest, ids carry a ``FX`` marker, and the bytes are identical on every
run (fixed zip timestamps, sorted keys), so the digest identifies the fixture version.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyrepro.errors import NetworkError, NotFoundError
from pyrepro.fsutil import file_sha256

# Bump whenever the bytes change (new fields, entries, layout): it names the cache folder.
FIXTURE_VERSION = 3
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

# jarvis-tools js_tags: every name a jarvis-tools version maps these datasets to (read from
# jarvis/db/figshare.py): data("dft_3d") is the 2021 55k file in 2022.9.16 (matformer), the
# 12-12-2022 76k file in 2023.4.6 (kgcnn_*) and 2024.10.30 (the others), and the 9-24-2025 file
# in 2026.x; data("dft_3d_2021") is the 2021 file from 2023.x on.
DFT_3D_TAGS = ("jdft_3d-8-18-2021.json", "jdft_3d-12-12-2022.json", "jdft_3d-9-24-2025.json")
CFID_3D_TAGS = ("cfid_3d-8-18-2021.json",)
CHEM_TAGS = {"ssub": "ssub.json", "supercon_chem": "supercon_chem.json", "mag2d_chem": "mag2d_chem.json"}
CHEM_TARGETS = {"ssub": "formula_energy", "supercon_chem": "Tc", "mag2d_chem": "magnetic_moment"}
DFT_3D_FIELDS = ("exfoliation_energy", "optb88vdw_total_energy", "formation_energy_peratom",
                 "optb88vdw_bandgap", "mbj_bandgap", "bulk_modulus_kv", "shear_modulus_gv",
                 "slme", "spillage", "ehull", "magmom_oszicar", "kpoint_length_unit", "encut",
                 "epsx", "epsy", "epsz", "mepsx", "mepsy", "mepsz", "n-Seebeck", "n-powerfact",
                 "avg_elec_mass", "avg_hole_mass", "max_efg", "dfpt_piezo_max_dij",
                 "dfpt_piezo_max_dielectric", "Tc_supercon", "max_ir_mode", "min_ir_mode",
                 "p-Seebeck", "p-powerfact", "ncond", "pcond", "nkappa", "pkappa",
                 "dfpt_piezo_max_eij", "ph_heat_capacity")
CFID_LEN = 1557
SPLIT = {"train": 40, "val": 8, "test": 8}  # the chemistry benchmarks (train/test only: 40/8)
# The exfoliation benchmark is split the way the real dft_3d benchmarks were made: ALIGNN's
# seed-123 shuffle of every entry with a value, 80/10/10 (int() sizes). cgcnn and matformer
# split the dataset themselves with the same permutation, so their test sets are the
# benchmark's on the fixture too (as they are on the real 2021/2022 data).
EXF_N = 60
SPLIT_SEED = 123

# Prototype structures: (name, lattice vectors in Angstrom, [(site label, frac coords)]).
# Site labels A/B/C are substituted per entry from SUBSTITUTIONS.
_a = 5.43
PROTOTYPES: tuple[tuple[str, list[list[float]], list[tuple[str, tuple[float, float, float]]]], ...] = (
    ("diamond", [[0, _a / 2, _a / 2], [_a / 2, 0, _a / 2], [_a / 2, _a / 2, 0]],
     [("A", (0, 0, 0)), ("A", (0.25, 0.25, 0.25))]),
    ("zincblende", [[0, 2.83, 2.83], [2.83, 0, 2.83], [2.83, 2.83, 0]],
     [("A", (0, 0, 0)), ("B", (0.25, 0.25, 0.25))]),
    ("rocksalt", [[0, 2.82, 2.82], [2.82, 0, 2.82], [2.82, 2.82, 0]],
     [("A", (0, 0, 0)), ("B", (0.5, 0.5, 0.5))]),
    ("graphite", [[2.46, 0, 0], [-1.23, 2.1304, 0], [0, 0, 6.70]],
     [("A", (0, 0, 0.25)), ("A", (0, 0, 0.75)), ("A", (1 / 3, 2 / 3, 0.25)), ("A", (2 / 3, 1 / 3, 0.75))]),
    ("hBN", [[2.50, 0, 0], [-1.25, 2.1651, 0], [0, 0, 6.66]],
     [("A", (1 / 3, 2 / 3, 0.25)), ("B", (2 / 3, 1 / 3, 0.25)), ("A", (2 / 3, 1 / 3, 0.75)), ("B", (1 / 3, 2 / 3, 0.75))]),
    ("2H-MoS2", [[3.16, 0, 0], [-1.58, 2.7366, 0], [0, 0, 12.29]],
     [("A", (1 / 3, 2 / 3, 0.25)), ("A", (2 / 3, 1 / 3, 0.75)), ("B", (1 / 3, 2 / 3, 0.621)),
      ("B", (1 / 3, 2 / 3, 0.879)), ("B", (2 / 3, 1 / 3, 0.121)), ("B", (2 / 3, 1 / 3, 0.379))]),
    ("fcc", [[0, 1.80, 1.80], [1.80, 0, 1.80], [1.80, 1.80, 0]], [("A", (0, 0, 0))]),
    ("bcc", [[-1.43, 1.43, 1.43], [1.43, -1.43, 1.43], [1.43, 1.43, -1.43]], [("A", (0, 0, 0))]),
    ("perovskite", [[3.90, 0, 0], [0, 3.90, 0], [0, 0, 3.90]],
     [("A", (0, 0, 0)), ("B", (0.5, 0.5, 0.5)), ("C", (0.5, 0.5, 0)), ("C", (0.5, 0, 0.5)), ("C", (0, 0.5, 0.5))]),
    ("wurtzite", [[3.25, 0, 0], [-1.625, 2.8146, 0], [0, 0, 5.21]],
     [("A", (1 / 3, 2 / 3, 0)), ("A", (2 / 3, 1 / 3, 0.5)), ("B", (1 / 3, 2 / 3, 0.382)), ("B", (2 / 3, 1 / 3, 0.882))]),
)
SUBSTITUTIONS: tuple[dict[str, str], ...] = (
    {"A": "Si", "B": "C", "C": "O"}, {"A": "Ga", "B": "As", "C": "O"}, {"A": "Na", "B": "Cl", "C": "F"},
    {"A": "Mo", "B": "S", "C": "O"}, {"A": "W", "B": "Se", "C": "O"}, {"A": "B", "B": "N", "C": "O"},
    {"A": "Cu", "B": "Zn", "C": "O"}, {"A": "Sr", "B": "Ti", "C": "O"}, {"A": "Zn", "B": "O", "C": "S"},
    {"A": "Mg", "B": "O", "C": "F"}, {"A": "Al", "B": "N", "C": "O"}, {"A": "Fe", "B": "Ni", "C": "O"},
)
LAYERED = {"graphite", "hBN", "2H-MoS2"}
CHEM_FORMULAS = ("NaCl", "MgO", "SiC", "GaAs", "ZnO", "AlN", "BN", "MoS2", "WSe2", "SrTiO3", "CuZn",
                 "Fe2O3", "TiO2", "Al2O3", "CaF2", "LiF", "KBr", "NbN", "MgB2", "YBa2Cu3O7",
                 "La2CuO4", "FeSe", "CrI3", "Fe3GeTe2", "NiO", "CoO", "MnO", "VSe2", "CrBr3", "Nb3Sn")


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts (no global RNG state)."""
    h = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _lattice_params(mat: list[list[float]]) -> tuple[list[float], list[float]]:
    lens = [math.sqrt(sum(x * x for x in v)) for v in mat]

    def angle(u: list[float], v: list[float]) -> float:
        c = sum(a * b for a, b in zip(u, v, strict=True)) / (math.sqrt(sum(a * a for a in u)) * math.sqrt(sum(b * b for b in v)))
        return round(math.degrees(math.acos(max(-1.0, min(1.0, c)))), 3)

    return [round(x, 6) for x in lens], [angle(mat[1], mat[2]), angle(mat[0], mat[2]), angle(mat[0], mat[1])]


def _entry(i: int) -> dict[str, Any]:
    proto_name, lattice, sites = PROTOTYPES[i % len(PROTOTYPES)]
    subs = SUBSTITUTIONS[(i // len(PROTOTYPES) + i) % len(SUBSTITUTIONS)]
    scale = 0.97 + 0.06 * _unit("scale", i)
    mat = [[round(x * scale, 6) for x in v] for v in lattice]
    elements = [subs[label] for label, _ in sites]
    coords = [list(c) for _, c in sites]
    abc, angles = _lattice_params(mat)
    volume_per_atom = abs(
        mat[0][0] * (mat[1][1] * mat[2][2] - mat[1][2] * mat[2][1])
        - mat[0][1] * (mat[1][0] * mat[2][2] - mat[1][2] * mat[2][0])
        + mat[0][2] * (mat[1][0] * mat[2][1] - mat[1][1] * mat[2][0])) / len(sites)
    jid = f"JVASP-FX{i + 1:04d}"
    layered = proto_name in LAYERED
    e: dict[str, Any] = {
        "jid": jid,
        "atoms": {"lattice_mat": mat, "coords": coords, "elements": elements, "abc": abc,
                  "angles": angles, "cartesian": False, "props": ["" for _ in sites]},
        "formula": "".join(sorted(set(elements))),
        "fixture": True,
        "prototype": proto_name,
    }
    for f in DFT_3D_FIELDS:
        u = _unit(f, i)
        e[f] = round(10 * u + 0.1 * volume_per_atom + len(set(elements)), 4)
    # Exfoliation energy has a value for layered structures and the first EXF_N entries, and "na"
    # elsewhere, as the real data has "na" where it was not computed.
    e["exfoliation_energy"] = round(40 + 3 * volume_per_atom + 30 * _unit("exf", i), 3) if layered or i < EXF_N else "na"
    return e


def dft_3d_entries(n: int | None = None) -> list[dict[str, Any]]:
    total = n if n is not None else sum(SPLIT.values()) + 8
    return [_entry(i) for i in range(total)]


def cfid_entries(dft: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in dft:
        desc = [round(_unit("desc", e["jid"], k) * (1 + (k % 7)), 5) for k in range(CFID_LEN)]
        out.append({"jid": e["jid"], "desc": desc, "fixture": True})
    return out


def chem_entries(dataset: str, n: int = SPLIT["train"] + SPLIT["test"]) -> list[dict[str, Any]]:
    target = CHEM_TARGETS[dataset]
    out = []
    for i in range(n):
        formula = CHEM_FORMULAS[i % len(CHEM_FORMULAS)]
        out.append({"id": 1000 + i, "formula": formula,
                    target: round((_unit(dataset, i) - 0.3) * (10 if dataset == "supercon_chem" else 2), 5),
                    "fixture": True})
    return out


def seed_split(ids: list[str], seed: int = SPLIT_SEED, ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)
               ) -> dict[str, list[str]]:
    """ALIGNN's ``get_id_train_val_test``: shuffle with ``random.seed(seed)``, then train is the
    first ``int(0.8 N)``, test the last ``int(0.1 N)``, val the ``int(0.1 N)`` before it."""
    import random

    order = list(ids)
    random.Random(seed).shuffle(order)
    n = len(order)
    n_train, n_val, n_test = int(ratios[0] * n), int(ratios[1] * n), int(ratios[2] * n)
    return {"train": order[:n_train], "val": order[-(n_val + n_test):-n_test], "test": order[-n_test:]}


def _split(ids: list[str], with_val: bool = True) -> dict[str, list[str]]:
    n_train, n_val = SPLIT["train"], SPLIT["val"] if with_val else 0
    n_test = SPLIT["test"]
    return {"train": ids[:n_train], "val": ids[n_train:n_train + n_val],
            "test": ids[n_train + n_val:n_train + n_val + n_test]}


def _zip_bytes(member: str, payload: str) -> bytes:
    """One-member zip, byte-identical everywhere: fixed timestamp and mode, and stored, not
    deflated (deflate output depends on the zlib build, e.g. zlib-ng, so it would not be)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        info = zipfile.ZipInfo(member, date_time=ZIP_DATE)
        info.compress_type = zipfile.ZIP_STORED
        info.create_system = 3
        info.external_attr = 0o644 << 16
        z.writestr(info, payload)
    return buf.getvalue()


def _dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Fixture:
    root: Path
    benchmarks_dir: Path
    data_dir: Path
    digest: str
    files: tuple[str, ...]
    kind: str = "fixture"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "root": str(self.root), "benchmarks_dir": str(self.benchmarks_dir),
                "data_dir": str(self.data_dir), "digest": self.digest, "files": list(self.files),
                "version": FIXTURE_VERSION}


def fixture_files() -> dict[str, bytes]:
    """Relative path -> bytes of every fixture file (deterministic)."""
    files: dict[str, bytes] = {}
    dft = dft_3d_entries()
    for tag in DFT_3D_TAGS:
        files[f"data/{tag}.zip"] = _zip_bytes(tag, _dump(dft))
    cfid = cfid_entries(dft)
    for tag in CFID_3D_TAGS:
        files[f"data/{tag}.zip"] = _zip_bytes(tag, _dump(cfid))
    ids = [e["jid"] for e in dft if e["exfoliation_energy"] != "na"]
    parts = seed_split(ids)
    by_id = {e["jid"]: e for e in dft}
    bench = {p: {i: by_id[i]["exfoliation_energy"] for i in v} for p, v in parts.items()}
    files["benchmarks/dft_3d_exfoliation_energy.json.zip"] = _zip_bytes(
        "dft_3d_exfoliation_energy.json", _dump(bench))
    for ds, tag in CHEM_TAGS.items():
        entries = chem_entries(ds)
        files[f"data/{tag}.zip"] = _zip_bytes(tag, _dump(entries))
        target = CHEM_TARGETS[ds]
        # The real chemistry benchmarks have train and test only.
        cparts = _split([str(e["id"]) for e in entries], with_val=False)
        cby = {str(e["id"]): e[target] for e in entries}
        cbench = {p: {i: cby[i] for i in v} for p, v in cparts.items() if p != "val"}
        files[f"benchmarks/{ds}_{target}.json.zip"] = _zip_bytes(f"{ds}_{target}.json", _dump(cbench))
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    manifest = {"kind": "fixture", "version": FIXTURE_VERSION, "digest": "sha256:" + digest.hexdigest(),
                "note": "pyrepro fixture data: synthetic targets on prototype structures; proves "
                        "executability, never a numerical result",
                "files": {rel: hashlib.sha256(b).hexdigest() for rel, b in sorted(files.items())}}
    files["FIXTURE.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    return files


def measured_digest(dest: Path, rels: Iterable[str]) -> str | None:
    """The fixture digest of the files as they are on disk (None when one is missing)."""
    digest = hashlib.sha256()
    try:
        for rel in sorted(rels):
            digest.update(rel.encode() + b"\0" + hashlib.sha256((dest / rel).read_bytes()).digest())
    except OSError:
        return None
    return "sha256:" + digest.hexdigest()


def _is_current(dest: Path, digest: str) -> bool:
    """``dest`` holds this fixture: its manifest says so and its files, measured, agree (a
    changed target value is not this fixture any more)."""
    try:
        manifest = json.loads((dest / "FIXTURE.json").read_text())
        return bool(manifest["digest"] == digest and measured_digest(dest, manifest["files"]) == digest)
    except (ValueError, KeyError, TypeError, OSError):
        return False


def write_fixture(dest: Path) -> Fixture:
    """Write the fixture under ``dest`` atomically (a temp dir renamed into place).

    A ``dest`` already holding this fixture (same digest) is left alone; anything else there is
    replaced. Safe against a concurrent writer of the same fixture: the loser keeps the winner's.
    """
    files = fixture_files()
    manifest = json.loads(files["FIXTURE.json"])
    dest = Path(dest)
    if _is_current(dest, manifest["digest"]):
        return _fixture(dest, manifest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    old = tmp.with_name(tmp.name + ".old")
    try:
        for rel, data in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        try:
            if dest.exists():
                os.replace(dest, old)
            os.replace(tmp, dest)
        except OSError:
            if not _is_current(dest, manifest["digest"]):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return _fixture(dest, manifest)


def _fixture(dest: Path, manifest: dict[str, Any]) -> Fixture:
    return Fixture(root=dest, benchmarks_dir=dest / "benchmarks", data_dir=dest / "data",
                   digest=manifest["digest"], files=tuple(sorted(manifest["files"])))


# ---- the real datasets -------------------------------------------------------------

@dataclass(frozen=True)
class RealDataset:
    name: str
    file: str
    url: str
    figshare: str
    sha256: str | None
    used_by: tuple[str, ...]
    note: str = ""

    @property
    def host(self) -> str:
        return self.url.split("/")[2]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "url": self.url, "figshare": self.figshare,
                "sha256": self.sha256, "used_by": list(self.used_by), "note": self.note}


@dataclass(frozen=True)
class BenchmarkPin:
    name: str
    sha256: str


@dataclass(frozen=True)
class Fetched:
    """A downloaded dataset file and the hash recorded for it in ``<out>/FETCHED.json``."""

    name: str
    path: Path
    sha256: str
    size: int
    pinned: bool  # True when the hash was checked against datasets.toml, False when only recorded

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256, "size": self.size,
                "pinned": self.pinned}


FETCHED_MANIFEST = "FETCHED.json"


def _datasets_toml() -> dict[str, Any]:
    from importlib.resources import files as res_files

    return tomllib.loads(res_files("pyrepro").joinpath("data/datasets.toml").read_text(encoding="utf-8"))


def real_datasets() -> tuple[RealDataset, ...]:
    """The real jarvis-tools datasets (pyrepro/data/datasets.toml); sha256 None = not yet observed."""
    return tuple(RealDataset(name=d["name"], file=d["file"], url=d["url"], figshare=d["figshare"],
                             sha256=d.get("sha256") or None, used_by=tuple(d.get("used_by", [])),
                             note=d.get("note", "")) for d in _datasets_toml()["dataset"])


def benchmark_pins() -> tuple[BenchmarkPin, ...]:
    """The real benchmark split files pyrepro pins (jarvis_leaderboard@57afc55f)."""
    return tuple(BenchmarkPin(b["name"], b["sha256"]) for b in _datasets_toml().get("benchmark", []))


def _sha256_file(path: Path) -> str:
    return str(file_sha256(path).hexdigest())


def fetch_real(name: str, out: Path, *, downloader: Any = None) -> Fetched:
    """Download a real dataset zip into ``out`` (atomically) and record its sha256.

    A pinned hash (datasets.toml) is checked; an unpinned one is recorded in
    ``<out>/FETCHED.json`` (and reported) so it can be reviewed and pinned.
    ``downloader(url, dest_path)`` defaults to urllib; OSError from it means the host is unreachable.
    """
    ds = {d.name: d for d in real_datasets()}.get(name)
    if ds is None:
        known = ", ".join(d.name for d in real_datasets())
        raise NotFoundError(f"unknown dataset {name!r}; known: {known}", hint="see 'pyrepro data list'")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / ds.file
    tmp = target.with_name(f".{target.name}.part")
    try:
        (downloader or _urllib_download)(ds.url, tmp)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise NetworkError(f"cannot download dataset {name} ({ds.file}) from {ds.host}: {exc}",
                           hint=f"{ds.host} is unreachable from this network; use '--data fixture' for a test run, "
                                f"or copy {ds.file} into {out} by hand") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    got = _sha256_file(tmp)
    if ds.sha256 and got != ds.sha256:
        tmp.unlink(missing_ok=True)
        from pyrepro.errors import IntegrityError

        raise IntegrityError(f"dataset {name} ({ds.file}) from {ds.url} does not match its pin in "
                             "pyrepro/data/datasets.toml", expected=ds.sha256, actual=got)
    size = tmp.stat().st_size
    os.replace(tmp, target)
    _record_fetch(out, ds, got, size)
    return Fetched(name=name, path=target, sha256=got, size=size, pinned=bool(ds.sha256))


def _record_fetch(out: Path, ds: RealDataset, sha256: str, size: int) -> None:
    manifest_path = out / FETCHED_MANIFEST
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except ValueError:
            manifest = {}
    manifest[ds.file] = {"name": ds.name, "url": ds.url, "figshare": ds.figshare, "sha256": sha256,
                         "size": size, "pinned": bool(ds.sha256)}
    tmp = manifest_path.with_name(f".{FETCHED_MANIFEST}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, manifest_path)


def _urllib_download(url: str, dest: Path) -> None:  # pragma: no cover - needs the network
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r, open(dest, "wb") as f:
        shutil.copyfileobj(r, f)
