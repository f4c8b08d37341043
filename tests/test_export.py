"""pyrepro.oci and pyrepro.export without a model: layer bytes, the archive's digests, the
unpacker's whiteouts and refusals, relocation, bytecode dating, ldd's output. No network."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import py_compile
import struct
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pyrepro import export, oci
from pyrepro.errors import InputError, IntegrityError


def _entries(tmp_path: Path) -> list[oci.Entry]:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    os.utime(big, (1_700_000_000, 1_700_000_000))  # the host's time never reaches the layer
    return [
        oci.file_entry("opt/app/run.py", b"print('hi')\n", 0o755),
        oci.link_entry("opt/app/current", "run.py"),
        oci.Entry("opt/data/big.bin", "file", 0o644, source=big,
                  sha256=hashlib.sha256(big.read_bytes()).hexdigest()),
        oci.dir_entry("opt/empty", 0o700),
        oci.file_entry("etc/x.conf", b"a=1\n"),
    ]


def test_write_layer__same_entries_any_order__same_bytes_sorted_fixed_times(tmp_path: Path) -> None:
    entries = _entries(tmp_path)
    a = oci.write_layer(entries, tmp_path / "a")
    b = oci.write_layer(list(reversed(entries)), tmp_path / "b")
    assert a.path.read_bytes() == b.path.read_bytes()
    assert (a.digest, a.diff_id, a.size) == (b.digest, b.diff_id, b.size)
    raw = a.path.read_bytes()
    assert a.digest == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip header: no time
    plain = gzip.decompress(raw)
    assert a.diff_id == "sha256:" + hashlib.sha256(plain).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    # every parent folder is an entry of its own, before what it holds
    assert names == ["etc", "etc/x.conf", "opt", "opt/app", "opt/app/current", "opt/app/run.py", "opt/data",
                     "opt/data/big.bin", "opt/empty"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(oci.EPOCH, 0, 0, "", "")}
    modes = {m.name: m.mode for m in members}
    assert modes["opt/app/run.py"] == 0o755 and modes["opt/empty"] == 0o700
    assert next(m for m in members if m.name == "opt/app/current").linkname == "run.py"


def test_write_layer__changed_content__different_digest(tmp_path: Path) -> None:
    a = oci.write_layer([oci.file_entry("f", b"1")], tmp_path / "a")
    b = oci.write_layer([oci.file_entry("f", b"2")], tmp_path / "b")
    c = oci.write_layer([oci.file_entry("f", b"1", 0o755)], tmp_path / "c")
    assert len({a.digest, b.digest, c.digest}) == 3


def test_write_layer__source_differs_from_its_verified_hash__integrity_error_and_no_blob(tmp_path: Path) -> None:
    f = tmp_path / "lib.so"
    f.write_bytes(b"verified bytes")
    digest = hashlib.sha256(b"verified bytes").hexdigest()
    f.write_bytes(b"planted bytes!")  # same size, other content
    out = tmp_path / "blobs"
    with pytest.raises(IntegrityError, match="changed since it was verified"):
        oci.write_layer([oci.Entry("opt/lib.so", "file", source=f, sha256=digest)], out)
    assert list(out.iterdir()) == []
    # a transformed file is checked before it is transformed
    with pytest.raises(IntegrityError):
        oci.write_layer([oci.Entry("opt/x.txt", "file", source=f, sha256=digest, transform=lambda b: b)], out)


def test_entry__unclean_path__refused() -> None:
    for bad in ("/abs", "a/../b", "a//b", "", "./a"):
        with pytest.raises(ValueError):
            oci.file_entry(bad, b"")


def _archive(tmp_path: Path, layers: list[list[oci.Entry]], name: str = "img.tar") -> oci.Archive:
    blobs = [oci.write_layer(entries, tmp_path / "blobs") for entries in layers]
    config = oci.image_config(blobs, entrypoint=["/bin/true"], env={"PATH": "/bin"}, workdir="/",
                              labels={"k": "v"}, history=[f"layer {i}" for i in range(len(blobs))])
    return oci.write_archive(tmp_path / name, blobs, config, name="pyrepro/t", tag="x")


def test_write_archive__index_manifest_config_and_docker_manifest__digests_agree(tmp_path: Path) -> None:
    arch = _archive(tmp_path, [[oci.file_entry("a", b"1")], [oci.file_entry("b", b"2")]])
    with tarfile.open(arch.path) as tar:
        names = tar.getnames()
        blob = lambda d: tar.extractfile(f"blobs/sha256/{d[7:]}").read()  # noqa: E731
        index = json.loads(tar.extractfile("index.json").read())
        assert json.loads(tar.extractfile("oci-layout").read()) == {"imageLayoutVersion": "1.0.0"}
        [desc] = index["manifests"]
        raw_manifest = blob(desc["digest"])
        assert "sha256:" + hashlib.sha256(raw_manifest).hexdigest() == desc["digest"] == arch.manifest.digest
        assert len(raw_manifest) == desc["size"] and desc["mediaType"] == oci.MANIFEST
        assert desc["annotations"][oci.REF_NAME] == "x"
        manifest = json.loads(raw_manifest)
        raw_config = blob(manifest["config"]["digest"])
        assert "sha256:" + hashlib.sha256(raw_config).hexdigest() == manifest["config"]["digest"]
        config = json.loads(raw_config)
        for layer, diff_id in zip(manifest["layers"], config["rootfs"]["diff_ids"], strict=True):
            data = blob(layer["digest"])
            assert "sha256:" + hashlib.sha256(data).hexdigest() == layer["digest"] and len(data) == layer["size"]
            assert "sha256:" + hashlib.sha256(gzip.decompress(data)).hexdigest() == diff_id
        docker = json.loads(tar.extractfile("manifest.json").read())
        assert docker == [{"Config": f"blobs/sha256/{manifest['config']['digest'][7:]}", "RepoTags": ["pyrepro/t:x"],
                           "Layers": [f"blobs/sha256/{lay['digest'][7:]}" for lay in manifest["layers"]]}]
        assert all(p in names for p in docker[0]["Layers"])
    assert config["config"]["Entrypoint"] == ["/bin/true"] and config["config"]["Labels"] == {"k": "v"}
    assert [h["created_by"] for h in config["history"]] == ["layer 0", "layer 1"]
    # the whole archive is the same bytes when written again
    again = _archive(tmp_path, [[oci.file_entry("a", b"1")], [oci.file_entry("b", b"2")]], "img2.tar")
    assert again.path.read_bytes() == arch.path.read_bytes()
    image = oci.read_archive(arch.path)
    assert image.config == config and image.manifest == manifest


def test_image_config__diff_ids_not_the_layers__refused(tmp_path: Path) -> None:
    blobs = [oci.write_layer([oci.file_entry("a", b"1")], tmp_path / "b")]
    config = oci.image_config(blobs, entrypoint=[], env={}, workdir="/", labels={}, history=["x"])
    config["rootfs"]["diff_ids"] = ["sha256:" + "0" * 64]
    with pytest.raises(ValueError):
        oci.write_archive(tmp_path / "i.tar", blobs, config, name="n", tag="t")


def test_unpack__whiteouts__hide_lower_layers_only(tmp_path: Path) -> None:
    base = [oci.file_entry("a/x", b"x"), oci.file_entry("a/y", b"y"), oci.file_entry("b/old1", b"1"),
            oci.file_entry("b/sub/old2", b"2"), oci.file_entry("c", b"c"), oci.link_entry("d", "c")]
    upper = [oci.file_entry("a/.wh.x", b""),           # removes a/x
             oci.file_entry("b/.wh..wh..opq", b""),    # hides everything of b from lower layers ...
             oci.file_entry("b/new", b"new"),          # ... but not what this layer puts there
             oci.file_entry(".wh.d", b""),             # a link removed, not its target
             oci.file_entry("c", b"c2")]               # a file replaced
    top = [oci.file_entry(".wh.c", b""), oci.file_entry("e/.wh.never-there", b"")]
    arch = _archive(tmp_path, [base, upper, top])
    root = tmp_path / "root"
    counts = oci.unpack(arch.path, root)
    got = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert got == ["a", "a/y", "b", "b/new", "e"]
    assert (root / "b" / "new").read_bytes() == b"new"
    assert counts["layers"] == 3 and counts["whiteouts"] == 5
    assert not any(".wh." in p.name for p in root.rglob("*"))
    assert (root / "a" / "y").stat().st_mtime == oci.EPOCH


def _raw_layer(folder: Path, members: list[tuple[str, bytes]]) -> oci.Blob:
    """An uncompressed layer whose tar holds exactly ``members``, in that order (no parent folders)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    plain = raw.getvalue()
    digest = "sha256:" + hashlib.sha256(plain).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / digest[7:]).write_bytes(plain)
    return oci.Blob(folder / digest[7:], digest, len(plain), oci.LAYER_TAR, digest)


def _archive_of(tmp_path: Path, blobs: list[oci.Blob]) -> Path:
    config = oci.image_config(blobs, entrypoint=[], env={}, workdir="/", labels={},
                              history=[str(i) for i in range(len(blobs))])
    return oci.write_archive(tmp_path / "i.tar", blobs, config, name="n", tag="t").path


def test_unpack__opaque_whiteout_after_same_layer_entry__entry_kept(tmp_path: Path) -> None:
    """The OCI rule: a whiteout hides lower layers only, wherever it stands in its own layer's tar."""
    lower = oci.write_layer([oci.file_entry("d/old", b"o")], tmp_path / "blobs")
    upper = _raw_layer(tmp_path / "blobs", [("d/zz-new", b"n"), ("d/.wh..wh..opq", b"")])  # marker after
    root = tmp_path / "root"
    oci.unpack(_archive_of(tmp_path, [lower, upper]), root)
    assert sorted(p.name for p in (root / "d").iterdir()) == ["zz-new"]


def test_unpack__entry_through_a_link__refused_nothing_written_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    lower = oci.write_layer([oci.link_entry("evil", str(outside))], tmp_path / "blobs")
    upper = _raw_layer(tmp_path / "blobs", [("evil/pwned", b"x")])
    with pytest.raises(InputError, match="passes through the link"):
        oci.unpack(_archive_of(tmp_path, [lower, upper]), tmp_path / "root")
    assert list(outside.iterdir()) == []
    for name in ("../escape", "a/../../escape"):
        bad = _raw_layer(tmp_path / "blobs2", [(name, b"x")])
        with pytest.raises(InputError, match="not a clean relative path"):
            oci.unpack(_archive_of(tmp_path, [bad]), tmp_path / "root2")
    assert not (tmp_path / "escape").exists()
    # an absolute name is relative to the root, as tar takes it
    oci.unpack(_archive_of(tmp_path, [_raw_layer(tmp_path / "blobs3", [("/abs/x", b"x")])]), tmp_path / "root3")
    assert (tmp_path / "root3" / "abs" / "x").read_bytes() == b"x"


def test_unpack__folder_over_a_lower_link__link_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    arch = _archive(tmp_path, [[oci.link_entry("evil", str(outside))], [oci.file_entry("evil/f", b"x")]])
    root = tmp_path / "root"
    oci.unpack(arch.path, root)
    assert (root / "evil").is_dir() and not (root / "evil").is_symlink() and (root / "evil" / "f").is_file()
    assert list(outside.iterdir()) == []


def test_unpack__tampered_blob__integrity_error(tmp_path: Path) -> None:
    arch = _archive(tmp_path, [[oci.file_entry("a", b"payload" * 100)]])
    # rewrite the archive with one layer byte changed (the digests stay as they were)
    bad = tmp_path / "bad.tar"
    with tarfile.open(arch.path) as src, tarfile.open(bad, "w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if data is not None and m.name.endswith(arch.layers[0].digest[7:]):
                data = data[:-9] + bytes([data[-9] ^ 1]) + data[-8:]
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    with pytest.raises(IntegrityError, match="layer 0 does not match its digest"):
        oci.unpack(bad, tmp_path / "root")


# ------------------------------------------------------------------ relocation and bytecode

def test_relocation__whole_path_components_only() -> None:
    r = export.Relocation.of({Path("/c/envs/m-1"): "/opt/venv", Path("/p/py/3.10.13"): "/opt/python"})
    text = b"#!/c/envs/m-1/bin/python\nhome = /p/py/3.10.13/bin\nother=/c/envs/m-10/x /p/py/3.10.13\n"
    assert r.text(text, "f") == (b"#!/opt/venv/bin/python\nhome = /opt/python/bin\nother=/c/envs/m-10/x "
                                 b"/opt/python\n")
    assert r.changed == ["f"]
    assert r.link("/p/py/3.10.13/bin/python") == "/opt/python/bin/python"
    assert r.link("python3.10") == "python3.10" and r.link("/usr/lib/x") == "/usr/lib/x"
    assert r.mentions(b"x /c/envs/m-1") and not r.mentions(b"/c/envs/m-12")


def test_readable__temporary_folder_and_read_only_file__readable_by_all_writes_kept() -> None:
    import stat as st

    assert export.readable(st.S_IFDIR | 0o700) == 0o755
    assert export.readable(st.S_IFREG | 0o400) == 0o444
    assert export.readable(st.S_IFREG | 0o750) == 0o754


@pytest.mark.parametrize(("rel", "src"), [
    ("a/__pycache__/m.cpython-310.pyc", "a/m.py"),
    ("a/__pycache__/m.cpython-310.opt-1.pyc", "a/m.py"),
    ("__pycache__/m.cpython-310.pyc", "m.py"),
    ("a/m.pyc", "a/m.py"),  # Python 2
    ("a/m.py", None),
])
def test_pyc_source__layouts__source_path(rel: str, src: str | None) -> None:
    assert export.pyc_source(rel) == src


def test_clamp_pyc__fresh_stale_and_hash_based(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("X = 1\n")
    os.utime(src, (1_600_000_000, 1_600_000_000))
    pyc = tmp_path / "m.pyc"
    py_compile.compile(str(src), str(pyc), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    data = pyc.read_bytes()
    ver = "{}.{}.0".format(*sys.version_info[:2])
    out = export.clamp_pyc(data, 1_600_000_000, src.stat().st_size, python=ver)
    assert struct.unpack_from("<I", out, 8)[0] == oci.EPOCH and out[:8] == data[:8] and out[12:] == data[12:]
    assert export.clamp_pyc(data, 1_600_000_001, src.stat().st_size, python=ver) == data  # stale: kept
    assert export.clamp_pyc(data, 1_600_000_000, 99, python=ver) == data
    py_compile.compile(str(src), str(pyc), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    hashed = pyc.read_bytes()
    assert export.clamp_pyc(hashed, 1_600_000_000, src.stat().st_size, python=ver) == hashed
    # Python 3.6's 12-byte header (no flags) and 2.7's 8-byte one
    old = b"MAGI" + struct.pack("<II", 5, 6) + b"code"
    assert export.clamp_pyc(old, 5, 6, python="3.6.15") == b"MAGI" + struct.pack("<II", oci.EPOCH, 6) + b"code"
    assert export.clamp_pyc(b"MAGI" + struct.pack("<I", 5) + b"c", 5, 0, python="2.7.18")[4:8] == \
        struct.pack("<I", oci.EPOCH)


def test_tree_entries__bytecode_dated__interpreter_uses_it_after_unpacking(tmp_path: Path) -> None:
    """A module and its bytecode through a layer: the unpacked bytecode is taken, not recompiled."""
    tree = tmp_path / "site"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("VALUE = 42\n")
    (tree / "cfg.txt").write_text(f"home = {tree}/bin\n")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    reloc = export.Relocation.of({tree: "/opt/site"})
    ver = "{}.{}.{}".format(*sys.version_info[:3])
    t = export._tree_entries(tree, "/opt/site", files=None, links=None, reloc=reloc, python=ver)
    assert t.pycs_clamped == 1
    layer = oci.write_layer(t.entries, tmp_path / "b")
    config = oci.image_config([layer], entrypoint=[], env={}, workdir="/", labels={}, history=["x"])
    arch = oci.write_archive(tmp_path / "i.tar", [layer], config, name="n", tag="t")
    root = tmp_path / "root"
    oci.unpack(arch.path, root)
    assert (root / "opt/site/cfg.txt").read_text() == "home = /opt/site/bin\n"
    done = subprocess.run([sys.executable, "-v", "-c", "import pkg; print(pkg.VALUE)"], capture_output=True,
                          text=True, env={"PYTHONPATH": str(root / "opt/site"), "PYTHONDONTWRITEBYTECODE": "1"},
                          check=True)
    assert done.stdout.strip() == "42"
    pyc = root / "opt/site/pkg/__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    assert f"# {pyc} matches {root / 'opt/site/pkg/__init__.py'}" in done.stderr
    assert "bytecode is stale for 'pkg'" not in done.stderr


# ------------------------------------------------------------------ libraries

LDD_MANY = """\
/e/lib/a.so:
\tlinux-vdso.so.1 (0x00007ffd)
\tlibgomp.so.1 => /lib/x86_64-linux-gnu/libgomp.so.1 (0x00007f01)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f02)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f03)
/e/lib/b.so:
\tlibgfortran-040039e1.so.5.0.0 => not found
\tlibquux.so.2 => not found
\tlibpython3.10.so.1.0 => /p/lib/libpython3.10.so.1.0 (0x00007f04)
/e/lib/c.so:
\tstatically linked
"""


def test_parse_ldd__several_files_one_file__deps_and_loader() -> None:
    got = export.parse_ldd(LDD_MANY, ["/e/lib/a.so", "/e/lib/b.so", "/e/lib/c.so"])
    assert got["/e/lib/a.so"] == [("libgomp.so.1", "/lib/x86_64-linux-gnu/libgomp.so.1"),
                                  ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
                                  ("/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2")]
    assert ("libquux.so.2", None) in got["/e/lib/b.so"] and got["/e/lib/c.so"] == []
    one = "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f02)\n"
    assert export.parse_ldd(one, ["/x"]) == {"/x": [("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")]}


def test_shared_libraries__fake_ldd__system_within_and_missing(tmp_path: Path) -> None:
    from pyrepro import proc, sandbox

    calls = []

    def runner(cmd, **kw):
        calls.append(list(cmd))
        return proc.Completed(tuple(cmd), 0, LDD_MANY, "")

    needs = export.shared_libraries([Path("/e/lib/a.so"), Path("/e/lib/b.so"), Path("/e/lib/c.so")],
                                    [Path("/e"), Path("/p")], {"libgfortran-040039e1.so.5.0.0"},
                                    box=sandbox.Sandbox("none"), mounts=sandbox.Mounts(), runner=runner)
    assert calls == [["ldd", "/e/lib/a.so", "/e/lib/b.so", "/e/lib/c.so"]]
    assert needs.libraries == {"libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6",
                               "libgomp.so.1": "/lib/x86_64-linux-gnu/libgomp.so.1"}
    assert needs.loader == "/lib64/ld-linux-x86-64.so.2"
    assert needs.within == ("libgfortran-040039e1.so.5.0.0", "libpython3.10.so.1.0")
    assert needs.missing == (("libquux.so.2", "/e/lib/b.so"),)


def test_replicate__links_on_the_way__recreated_as_links(tmp_path: Path) -> None:
    real = tmp_path / "usr" / "lib"
    real.mkdir(parents=True)
    (real / "libz.so.1.2").write_bytes(b"\x7fELF")
    (real / "libz.so.1").symlink_to("libz.so.1.2")
    (tmp_path / "lib").symlink_to("usr/lib")
    out: dict[str, oci.Entry] = {}
    got = export.replicate(str(tmp_path / "lib" / "libz.so.1"), out)
    base = str(tmp_path).lstrip("/")
    assert got == f"{base}/usr/lib/libz.so.1.2"
    assert out[f"{base}/lib"] == oci.link_entry(f"{base}/lib", "usr/lib")
    assert out[f"{base}/usr/lib/libz.so.1"].target == "libz.so.1.2"
    assert out[got].kind == "file" and out[got].source == real / "libz.so.1.2"


# ------------------------------------------------------------------ the command

def test_export_cli__library_called__summary_and_json_envelope(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    from pyrepro import cli

    seen = {}

    def fake(spec, paths, *, out, mirror, progress):
        seen.update(name=spec.name, out=out)
        return export.Exported("cfid", tmp_path / "x.tar", "pyrepro/cfid:t", 123_000_000, "sha256:m", "sha256:c",
                               ({"what": "system", "digest": "sha256:l", "diff_id": "sha256:d", "size": 10,
                                 "entries": 3},), ("/opt/venv/bin/python", "/opt/model/src/run.py"),
                               {"libraries": {"missing": [{"name": "libcuda.so.1", "needed_by": "/opt/venv/x.so"}]}})

    monkeypatch.setattr("pyrepro.export.export_model", fake)
    res = CliRunner().invoke(cli.app, ["export", "cfid", "--out", str(tmp_path / "o.tar")])
    assert res.exit_code == 0, res.output
    assert seen == {"name": "cfid", "out": tmp_path / "o.tar"}
    assert "pyrepro/cfid:t" in res.output and "podman load -i" in res.output
    assert "libcuda.so.1 (needed by /opt/venv/x.so)" in res.output
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["export", "cfid", "--json"])
    assert code == 0
    env = json.loads(buf.getvalue())
    assert env["ok"] and env["result"]["reference"] == "pyrepro/cfid:t"
    assert env["result"]["missing_libraries"] == [{"name": "libcuda.so.1", "needed_by": "/opt/venv/x.so"}]


def test_relocation__binary_file__left_alone() -> None:
    r = export.Relocation.of({Path("/c/envs/m-1"): "/opt/venv"})
    data = b"\x7fELF\0\0/c/envs/m-1/lib\0"
    assert r.text(data, "x.o") == data and r.changed == []


def test_debian_packages__merged_usr_and_diversions__package_and_version() -> None:
    from pyrepro import proc

    def runner(cmd, **kw):
        if cmd[1] == "-S":
            out = ("diversion by dash from: /bin/sh\ndiversion by dash to: /bin/sh.distrib\ndash: /bin/sh\n"
                   "libx11-6:amd64: /usr/lib/x86_64-linux-gnu/libX11.so.6\n")
        else:
            out = "dash 0.5.12-2\nlibx11-6:amd64 2:1.8.4-2\n"
        return proc.Completed(tuple(cmd), 0, out, "")

    if proc.which("dpkg-query") is None:
        pytest.skip("no dpkg-query")
    got = export.debian_packages(["/bin/sh", "/lib/x86_64-linux-gnu/libX11.so.6"], runner)
    assert export.package_of("/bin/sh", got) == "dash 0.5.12-2"
    assert export.package_of("/lib/x86_64-linux-gnu/libX11.so.6", got) == "libx11-6:amd64 2:1.8.4-2"
    assert export.package_of("/opt/none.so", got) is None
