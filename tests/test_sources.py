"""pyrepro.sources: tree ids vs git, NAR hashes vs nix, sparse layouts vs git sparse-checkout, obtain_source."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from pyrepro import proc, sources
from pyrepro.cli import main
from pyrepro.errors import InputError, IntegrityError, NetworkError, NotFoundError
from pyrepro.registry import SourcePin, load_registry
from tests.conftest import have, nix_env
from tests.fakes import json_result

REPO = Path(__file__).resolve().parent.parent
needs_git = pytest.mark.skipif(not have("git"), reason="git is not installed")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def _git(args: list[str], cwd: Path) -> str:
    return proc.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}).stdout.strip()


def _tree(root: Path) -> Path:
    """A small repository-like tree: nested folders, an executable, a symlink, an empty dir, odd names."""
    files = {
        "README.md": "top\n",
        "setup.py": "print(1)\n",
        "pkg/__init__.py": "",
        "pkg/notes.txt": "n\n",
        "pkg/contributions/readme.txt": "c\n",
        "pkg/contributions/modelA/run.py": "print('a')\n",
        "pkg/contributions/modelA/sub/data.csv": "x,y\n1,2\n",
        "pkg/contributions/modelA/a-b.txt": "sorts before a/ in git\n",
        "pkg/contributions/modelA/a/inner.txt": "i\n",
        "pkg/contributions/modelB/run.py": "print('b')\n",
        "pkg/benchmarks/AI/SPP/b1.json.zip": "zip1",
        "pkg/benchmarks/AI/SPP/b2.json.zip": "zip2",
        "pkg/benchmarks/AI/SPP/b3.json.zip": "zip3",
        "pkg/benchmarks/top.json": "{}",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "pkg/contributions/modelA/run.sh").write_text("#!/bin/sh\n")
    (root / "pkg/contributions/modelA/run.sh").chmod(0o755)
    (root / "pkg/contributions/modelA/link").symlink_to("run.py")
    (root / "pkg/contributions/modelA/empty").mkdir()
    return root


# --------------------------------------------------------------------------- tree ids

@needs_git
def test_git_tree_id__nested_tree_with_exec_symlink_empty_dir__equals_git_write_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "r")
    _git(["init", "-q"], root)
    _git(["add", "-A"], root)
    assert sources.git_tree_id(root) == _git(["write-tree"], root)
    sub = root / "pkg" / "contributions" / "modelA"
    assert sources.git_tree_id(sub) == _git(["rev-parse", f"{_git(['write-tree'], root)}:pkg/contributions/modelA"], root)


def test_git_tree_id__empty_folder__git_empty_tree(tmp_path: Path) -> None:
    (tmp_path / "e" / "only-empty-dirs").mkdir(parents=True)
    assert sources.git_tree_id(tmp_path / "e") == sources.EMPTY_TREE


def test_git_tree_id__missing_folder__not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="not a folder"):
        sources.git_tree_id(tmp_path / "nope")


def test_git_tree_id__one_byte_changed__differs(tmp_path: Path) -> None:
    root = _tree(tmp_path / "r")
    before = sources.git_tree_id(root)
    (root / "pkg" / "notes.txt").write_text("N\n")
    assert sources.git_tree_id(root) != before


# --------------------------------------------------------------------------- NAR hashes

def test_nix_base32__roundtrip_and_known_value() -> None:
    d = bytes(range(32))
    assert sources.nix_base32_decode(sources.nix_base32(d)) == d
    # the flake.lock pin of flake-compat, in both spellings
    sri = "sha256-kvjfFW7WAETZlt09AgDn1MrtKzP7t90Vf7vypd3OL1U="
    digest = sources.parse_sri(sri)
    assert sources.NarHash(digest).sri == sri
    assert sources.parse_sri("sha256:" + sources.NarHash(digest).base32) == digest
    assert sources.parse_sri(digest.hex()) == digest
    with pytest.raises(ValueError, match="not a sha256"):
        sources.parse_sri("sha256-abc")


@pytest.mark.skipif(not have("nix-hash"), reason="nix is not installed")
def test_nar_hash__repository_tree__equals_nix_hash(tmp_path: Path) -> None:
    root = _tree(tmp_path / "r")
    b32 = proc.run(["nix-hash", "--type", "sha256", "--base32", str(root)], env=nix_env()).stdout.strip()
    assert sources.nar_hash(root).base32 == b32
    one = root / "README.md"
    flat = proc.run(["nix-hash", "--type", "sha256", "--base32", str(one)], env=nix_env()).stdout.strip()
    assert sources.nar_hash(one).base32 == flat


def test_nar_hash__executable_bit__changes_hash(tmp_path: Path) -> None:
    root = _tree(tmp_path / "r")
    before = sources.nar_hash(root)
    (root / "setup.py").chmod(0o755)
    assert sources.nar_hash(root) != before


def test_nar_hash__fifo__input_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f")
    with pytest.raises(InputError, match="special file"):
        sources.nar_hash(tmp_path)


# --------------------------------------------------------------------------- sparse layouts

def _sparse_checkout(repo: Path, dest: Path, patterns: list[str], cone: bool) -> Path:
    """What nixpkgs' fetchgit does: clone, `git sparse-checkout set [--no-cone]`, checkout, drop .git."""
    _git(["clone", "-q", "--no-checkout", f"file://{repo}", str(dest)], repo.parent)
    _git(["sparse-checkout", "set", *([] if cone else ["--no-cone"]), *patterns], dest)
    _git(["checkout", "-q"], dest)
    shutil.rmtree(dest / ".git")
    return dest


@needs_git
def test_cone_layout__contribution_folder__same_nar_as_git_cone_sparse_checkout(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    _git(["init", "-q"], repo)
    _git(["add", "-A"], repo)
    _git(["commit", "-qm", "x"], repo)
    want = _sparse_checkout(repo, tmp_path / "co", ["pkg/contributions/modelA"], cone=True)
    got = sources.cone_layout(repo, ["pkg/contributions/modelA"], tmp_path / "mine")
    assert sources.nar_hash(got) == sources.nar_hash(want)
    assert (got / "README.md").is_file() and (got / "pkg" / "notes.txt").is_file()
    assert not (got / "pkg" / "contributions" / "modelB").exists()
    assert not (got / "pkg" / "benchmarks").exists()


@needs_git
def test_files_layout__benchmark_files__same_nar_as_git_noncone_sparse_checkout(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    _git(["init", "-q"], repo)
    _git(["add", "-A"], repo)
    _git(["commit", "-qm", "x"], repo)
    files = list(sources.benchmark_files("pkg/benchmarks/AI/SPP", ("b1", "b3")))
    want = _sparse_checkout(repo, tmp_path / "co", files, cone=False)
    got = sources.files_layout(repo, files, tmp_path / "mine")
    assert sources.nar_hash(got) == sources.nar_hash(want)
    assert sorted(p.name for p in (got / "pkg/benchmarks/AI/SPP").iterdir()) == ["b1.json.zip", "b3.json.zip"]
    assert not (got / "README.md").exists()


def test_cone_layout__missing_or_escaping_folder__named_error(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    with pytest.raises(NotFoundError, match="pkg/contributions/nope"):
        sources.cone_layout(repo, ["pkg/contributions/nope"], tmp_path / "a")
    with pytest.raises(InputError, match="plain relative path"):
        sources.cone_layout(repo, ["pkg/../.."], tmp_path / "b")
    with pytest.raises(NotFoundError, match=r"b9\.json\.zip"):
        sources.files_layout(repo, ["pkg/benchmarks/AI/SPP/b9.json.zip"], tmp_path / "c")


@pytest.mark.upstream
def test_check_pins__committed_models__tree_ids_and_nar_hashes_match_the_mirror(upstream: Path) -> None:
    reg = load_registry(REPO / "models")
    for spec in reg:
        c = sources.check_pins(spec, upstream)
        assert c.ok, (spec.name, c.problems)


@pytest.mark.upstream
def test_check_pins__stale_hash__reported_and_write_fixes_it(upstream: Path, tmp_path: Path) -> None:
    d = tmp_path / "models" / "cfid"
    d.mkdir(parents=True)
    text = (REPO / "models" / "cfid" / "model.toml").read_text()
    good = load_registry(REPO / "models").get("cfid").source.nar_hash
    assert good is not None
    (d / "model.toml").write_text(text.replace(good, "sha256-" + "A" * 43 + "="))
    spec = load_registry(tmp_path / "models").get("cfid")
    c = sources.check_pins(spec, upstream)
    assert not c.ok and "expected sha256-AAAA" in c.problems[0] and good in c.problems[0]
    assert sources.write_pin_hashes(spec, c.hashes)
    assert (d / "model.toml").read_text() == text
    assert sources.check_pins(load_registry(tmp_path / "models").get("cfid"), upstream).ok


# --------------------------------------------------------------------------- obtain_source

def _mirror(tmp_path: Path) -> tuple[Path, SourcePin]:
    m = tmp_path / "mirror"
    folder = m / "repo" / "contrib" / "modelA"
    folder.mkdir(parents=True)
    (folder / "run.py").write_text("print(1)\n")
    (folder / "run.sh").write_text("python run.py\n")
    pin = SourcePin("https://github.com/o/repo", "c" * 40, "contrib/modelA", sources.git_tree_id(folder))
    return m, pin


def test_obtain_source__mirror_then_cache__verified_read_only_copy(tmp_path: Path) -> None:
    m, pin = _mirror(tmp_path)
    got = sources.obtain_source(pin, mirror=m, cache=tmp_path / "cache")
    assert got.origin == "mirror" and got.path == tmp_path / "cache" / "sources" / pin.tree
    assert sources.git_tree_id(got.path) == pin.tree
    assert not os.access(got.path / "run.py", os.W_OK) or os.geteuid() == 0
    assert not (got.path.stat().st_mode & 0o222)
    again = sources.obtain_source(pin, mirror=None, cache=tmp_path / "cache", online=False)
    assert again.origin == "cache" and again.path == got.path


def test_obtain_source__mirror_changed__integrity_error_names_both_ids(tmp_path: Path) -> None:
    m, pin = _mirror(tmp_path)
    (m / "repo" / "contrib" / "modelA" / "run.py").write_text("print(2)\n")
    with pytest.raises(IntegrityError) as e:
        sources.obtain_source(pin, mirror=m, cache=tmp_path / "cache")
    actual = sources.git_tree_id(m / "repo" / "contrib" / "modelA")
    assert pin.tree in str(e.value) and actual in str(e.value)
    assert not (tmp_path / "cache" / "sources" / pin.tree).exists()


def test_obtain_source__missing_mirror__not_found_with_hint(tmp_path: Path) -> None:
    _, pin = _mirror(tmp_path)
    with pytest.raises(NotFoundError) as e:
        sources.obtain_source(pin, mirror=tmp_path / "nowhere", cache=tmp_path / "cache")
    assert "mirror folder not found" in str(e.value) and "--mirror" in (e.value.hint or "")
    with pytest.raises(NotFoundError, match="no repo/contrib/other"):
        sources.obtain_source(SourcePin(pin.repository, pin.commit, "contrib/other", pin.tree),
                              mirror=tmp_path / "mirror", cache=tmp_path / "cache")


def test_obtain_source__offline_without_mirror__not_found(tmp_path: Path) -> None:
    _, pin = _mirror(tmp_path)
    with pytest.raises(NotFoundError, match="not cached and no mirror"):
        sources.obtain_source(pin, cache=tmp_path / "cache", online=False)


def test_obtain_source__damaged_cache__dropped_and_refetched(tmp_path: Path) -> None:
    m, pin = _mirror(tmp_path)
    got = sources.obtain_source(pin, mirror=m, cache=tmp_path / "cache").path
    sources.make_writable(got)
    (got / "run.py").write_text("tampered\n")
    again = sources.obtain_source(pin, mirror=m, cache=tmp_path / "cache")
    assert again.origin == "mirror" and (again.path / "run.py").read_text() == "print(1)\n"


def _tarball(top: str, files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_obtain_source__download__github_tarball_verified(tmp_path: Path) -> None:
    _, pin = _mirror(tmp_path)
    urls: list[str] = []

    def fake(url: str, dest: Path) -> None:
        urls.append(url)
        dest.write_bytes(_tarball("repo-" + "c" * 40, {"contrib/modelA/run.py": "print(1)\n",
                                                        "contrib/modelA/run.sh": "python run.py\n",
                                                        "README.md": "r\n"}))

    got = sources.obtain_source(pin, cache=tmp_path / "cache", downloader=fake)
    assert urls == [f"https://codeload.github.com/o/repo/tar.gz/{'c' * 40}"]
    assert got.origin == "download" and sources.git_tree_id(got.path) == pin.tree
    assert not list((tmp_path / "cache" / "downloads").iterdir())  # scratch removed


def test_obtain_source__download_of_other_content__integrity_error(tmp_path: Path) -> None:
    _, pin = _mirror(tmp_path)

    def fake(url: str, dest: Path) -> None:
        dest.write_bytes(_tarball("top", {"contrib/modelA/run.py": "print('evil')\n"}))

    with pytest.raises(IntegrityError, match="download of"):
        sources.obtain_source(pin, cache=tmp_path / "cache", downloader=fake)
    assert not (tmp_path / "cache" / "sources" / pin.tree).exists()


def test_obtain_source__unreachable_host__network_error(tmp_path: Path) -> None:
    _, pin = _mirror(tmp_path)

    def fake(url: str, dest: Path) -> None:
        raise NetworkError(f"cannot download {url}")

    with pytest.raises(NetworkError):
        sources.obtain_source(pin, cache=tmp_path / "cache", downloader=fake)


def test_tarball_url__non_github__input_error() -> None:
    with pytest.raises(InputError, match=r"only github\.com"):
        sources.tarball_url("https://gitlab.com/a/b", "c" * 40)


# --------------------------------------------------------------------------- CLI

def test_source_verify_cli__missing_mirror__exit_4(tmp_path: Path) -> None:
    assert main(["source", "verify", "cfid", "--mirror", str(tmp_path / "nowhere")]) == 4


@pytest.mark.upstream
def test_source_verify_cli__committed_models__exit_0(upstream: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", "verify", "--mirror", str(upstream), "--json"]) == 0
    rows = json_result(capsys.readouterr().out)
    assert len(rows) == 15 and all(r["ok"] for r in rows)


@pytest.mark.upstream
def test_source_fetch_cli__mirror__verified_copy(upstream: Path, isolated_cache: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", "fetch", "kgcnn_megnet", "--mirror", str(upstream), "--offline"]) == 0
    tree = load_registry(REPO / "models").get("kgcnn_megnet").source.tree
    assert f"tree {tree} verified" in capsys.readouterr().out
    assert (isolated_cache / "sources" / tree / "run.py").is_file()


# --------------------------------------------------------------------------- obtain_benchmarks

def _bench_spec(tmp_path: Path, benchmarks: tuple[str, ...] = ("b1", "b3")) -> tuple[Path, object]:
    from dataclasses import dataclass

    m = tmp_path / "mirror"
    repo = _tree(m / "repo")
    h = sources.sparse_hashes(repo, "pkg/contributions/modelA", "pkg/benchmarks/AI/SPP", benchmarks)
    pin = SourcePin("https://github.com/o/repo", "c" * 40, "pkg/contributions/modelA",
                    sources.git_tree_id(repo / "pkg/contributions/modelA"), h.source.sri,
                    "pkg/benchmarks/AI/SPP", h.benchmarks.sri)

    @dataclass(frozen=True)
    class Spec:
        source: SourcePin
        benchmarks: tuple[str, ...]
        path: Path

    return m, Spec(pin, benchmarks, tmp_path / "models" / "x" / "model.toml")


def test_obtain_benchmarks__partial_mirror__exactly_the_model_files_verified(tmp_path: Path) -> None:
    m, spec = _bench_spec(tmp_path)
    (m / "repo" / "pkg/benchmarks/AI/SPP/b2.json.zip").unlink()  # another model's file missing: fine
    got = sources.obtain_benchmarks(spec, mirror=m, cache=tmp_path / "cache")  # type: ignore[arg-type]
    assert got.origin == "mirror" and got.path.name == "SPP"
    assert sorted(p.name for p in got.path.iterdir()) == ["b1.json.zip", "b3.json.zip"]
    again = sources.obtain_benchmarks(spec, cache=tmp_path / "cache", online=False)  # type: ignore[arg-type]
    assert again.origin == "cache" and again.path == got.path


def test_obtain_benchmarks__changed_file__integrity_error(tmp_path: Path) -> None:
    m, spec = _bench_spec(tmp_path)
    (m / "repo" / "pkg/benchmarks/AI/SPP/b3.json.zip").write_text("other")
    with pytest.raises(IntegrityError, match="benchmarks_nar_hash") as e:
        sources.obtain_benchmarks(spec, mirror=m, cache=tmp_path / "cache")  # type: ignore[arg-type]
    assert spec.source.benchmarks_nar_hash in str(e.value)  # type: ignore[attr-defined]
    assert not [p for p in (tmp_path / "cache" / "benchmarks").iterdir()]


def test_obtain_benchmarks__missing_file_or_hash__named_errors(tmp_path: Path) -> None:
    m, spec = _bench_spec(tmp_path)
    (m / "repo" / "pkg/benchmarks/AI/SPP/b1.json.zip").unlink()
    with pytest.raises(NotFoundError, match=r"b1\.json\.zip"):
        sources.obtain_benchmarks(spec, mirror=m, cache=tmp_path / "cache")  # type: ignore[arg-type]
    from dataclasses import replace
    nohash = replace(spec, source=replace(spec.source, benchmarks_nar_hash=None))  # type: ignore[type-var]
    with pytest.raises(IntegrityError, match="not recorded"):
        sources.obtain_benchmarks(nohash, mirror=m, cache=tmp_path / "cache")


def test_obtain_benchmarks__download__tarball_layout_verified(tmp_path: Path) -> None:
    _, spec = _bench_spec(tmp_path)

    def fake(url: str, dest: Path) -> None:
        dest.write_bytes(_tarball("repo-top", {"pkg/benchmarks/AI/SPP/b1.json.zip": "zip1",
                                               "pkg/benchmarks/AI/SPP/b3.json.zip": "zip3", "README.md": "r"}))

    got = sources.obtain_benchmarks(spec, cache=tmp_path / "cache", downloader=fake)  # type: ignore[arg-type]
    assert got.origin == "download" and (got.path / "b3.json.zip").read_text() == "zip3"


@pytest.mark.upstream
def test_obtain_benchmarks__committed_models_from_mirror__verified(upstream: Path, tmp_path: Path) -> None:
    reg = load_registry(REPO / "models")
    for name in ("elemnet", "cfid"):
        got = sources.obtain_benchmarks(reg.get(name), mirror=upstream, cache=tmp_path / "cache")
        assert sorted(p.name for p in got.path.iterdir()) == sorted(f"{b}.json.zip" for b in reg.get(name).benchmarks)


@pytest.mark.upstream
def test_source_fetch_cli__benchmarks__verified_files(upstream: Path, isolated_cache: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", "fetch", "elemnet", "--benchmarks", "--mirror", str(upstream), "--offline", "--json"]) == 0
    out = json_result(capsys.readouterr().out)
    assert out["kind"] == "benchmarks" and out["origin"] == "mirror"
    assert sorted(p.name for p in Path(out["path"]).iterdir()) == [
        "mag2d_chem_magnetic_moment.json.zip", "ssub_formula_energy.json.zip", "supercon_chem_Tc.json.zip"]
