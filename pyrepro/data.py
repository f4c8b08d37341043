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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyrepro.errors import NetworkError, NotFoundError

FIXTURE_VERSION = 1
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

# jarvis-tools js_tags: every name any locked version maps these datasets to.
DFT_3D_TAGS = ("jdft_3d-8-18-2021.json", "jdft_3d-12-12-2022.json", "jdft_3d-9-24-2025.json")
CFID_3D_TAGS = ("cfid_3d-8-18-2021.json",)
CHEM_TAGS = {"ssub": "ssub.json", "supercon_chem": "supercon_chem.json", "mag2d_chem": "mag2d_chem.json"}
CHEM_TARGETS = {"ssub": "formula_energy", "supercon_chem": "Tc", "mag2d_chem": "magnetic_moment"}
DFT_3D_FIELDS = ("exfoliation_energy", "optb88vdw_total_energy", "formation_energy_peratom",
                 "optb88vdw_bandgap", "mbj_bandgap", "bulk_modulus_kv", "shear_modulus_gv",
                 "slme", "spillage", "ehull", "magmom_oszicar", "kpoint_length_unit", "encut",
                 "epsx", "epsy", "epsz", "mepsx", "mepsy", "mepsz", "n-Seebeck", "n-powerfact",
                 "avg_elec_mass", "avg_hole_mass", "max_efg", "dfpt_piezo_max_dij",
                 "dfpt_piezo_max_dielectric", "Tc_supercon", "max_ir_mode", "min_ir_mode")
CFID_LEN = 1557
SPLIT = {"train": 40, "val": 8, "test": 8}

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
    # Exfoliation energy is defined for layered materials (elsewhere "na", like the real data),
    # except that every entry used by the exfoliation benchmark needs a value.
    e["exfoliation_energy"] = round(40 + 3 * volume_per_atom + 30 * _unit("exf", i), 3) if layered or i < sum(SPLIT.values()) else "na"
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


def _split(ids: list[str], with_val: bool = True) -> dict[str, list[str]]:
    n_train, n_val = SPLIT["train"], SPLIT["val"] if with_val else 0
    n_test = SPLIT["test"]
    return {"train": ids[:n_train], "val": ids[n_train:n_train + n_val],
            "test": ids[n_train + n_val:n_train + n_val + n_test]}


def _zip_bytes(member: str, payload: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(member, date_time=ZIP_DATE)
        info.compress_type = zipfile.ZIP_DEFLATED
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
    parts = _split(ids)
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


def write_fixture(dest: Path) -> Fixture:
    """Write the fixture under ``dest`` atomically (a temp dir renamed into place)."""
    files = fixture_files()
    manifest = json.loads(files["FIXTURE.json"])
    dest = Path(dest)
    if (dest / "FIXTURE.json").is_file():
        try:
            if json.loads((dest / "FIXTURE.json").read_text())["digest"] == manifest["digest"]:
                return _fixture(dest, manifest)
        except (ValueError, KeyError, OSError):
            pass
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        for rel, data in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(dest, old)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
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


def real_datasets() -> tuple[RealDataset, ...]:
    from importlib.resources import files as res_files

    raw = tomllib.loads(res_files("pyrepro").joinpath("data/datasets.toml").read_text(encoding="utf-8"))
    return tuple(RealDataset(name=d["name"], file=d["file"], url=d["url"], figshare=d["figshare"],
                             sha256=d.get("sha256") or None, used_by=tuple(d.get("used_by", [])),
                             note=d.get("note", "")) for d in raw["dataset"])


def fetch_real(name: str, out: Path, *, downloader: Any = None) -> Path:
    """Download a real dataset zip into ``out`` (atomically), checking its sha256 when pinned."""
    ds = {d.name: d for d in real_datasets()}.get(name)
    if ds is None:
        raise NotFoundError(f"unknown dataset {name!r}", hint="see 'pyrepro data list'")
    out.mkdir(parents=True, exist_ok=True)
    target = out / ds.file
    tmp = target.with_suffix(target.suffix + ".part")
    try:
        (downloader or _urllib_download)(ds.url, tmp)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        host = ds.url.split("/")[2]
        raise NetworkError(f"cannot download dataset {name} from {host}: {exc}",
                           hint="figshare is unreachable from this network; use '--data fixture' for a test run, "
                                "or copy the file into the data folder by hand") from exc
    if ds.sha256:
        got = hashlib.sha256(tmp.read_bytes()).hexdigest()
        if got != ds.sha256:
            tmp.unlink(missing_ok=True)
            from pyrepro.errors import IntegrityError

            raise IntegrityError(f"dataset {name} ({ds.file}) does not match its pin", expected=ds.sha256, actual=got)
    os.replace(tmp, target)
    return target


def _urllib_download(url: str, dest: Path) -> None:  # pragma: no cover - needs the network
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r, open(dest, "wb") as f:
        shutil.copyfileobj(r, f)
