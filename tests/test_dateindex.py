"""The date-bounded view of the index that pip (Python 2 locks) resolves from: ``pyrepro.dateindex``,
on its own over HTTP and through ``lock_request``."""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro import lock, piplock
from pyrepro.dateindex import DateBoundIndex, page
from pyrepro.index import Index
from pyrepro.proc import Completed
from tests.fakes import FakeRunner

PY2 = Path("/opt/fake/python2.7")

KERAS = {"name": "keras", "files": [
    {"filename": "Keras-2.0.8-py2.py3-none-any.whl", "url": "https://files.example/k/Keras-2.0.8-py2.py3-none-any.whl",
     "hashes": {"sha256": "aa"}, "upload-time": "2017-08-25T00:00:00.000000Z"},
    {"filename": "Keras-2.3.1-py2.py3-none-any.whl", "url": "https://files.example/k/Keras-2.3.1-py2.py3-none-any.whl",
     "hashes": {"sha256": "bb"}, "upload-time": "2019-10-09T18:57:13.100000Z"},
    {"filename": "keras-2.10.0-py2.py3-none-any.whl", "url": "https://files.example/k/keras-2.10.0-py2.py3-none-any.whl",
     "hashes": {"sha256": "cc"}, "upload-time": "2022-09-06T21:00:00.000000Z", "requires-python": ">=3.7"},
    {"filename": "Keras-2.1.0.tar.gz", "url": "https://files.example/k/Keras-2.1.0.tar.gz",
     "hashes": {"sha256": "dd"}, "upload-time": "2017-11-01T00:00:00Z", "yanked": "broken <release>"},
]}


def _fake_index(projects: dict[str, dict]) -> Index:
    def fetch(url: str) -> bytes | None:
        name = url.rstrip("/").rsplit("/", 1)[-1]
        return json.dumps(projects[name]).encode() if name in projects else None

    return Index(None, fetch=fetch)


def _links(html: str) -> list[str]:
    return re.findall(r">([^<>]+)</a>", html)


def test_page__only_files_uploaded_before_the_bound__attributes_kept_and_escaped() -> None:
    html = page(KERAS, "2020-01-01")
    assert _links(html) == ["Keras-2.0.8-py2.py3-none-any.whl", "Keras-2.3.1-py2.py3-none-any.whl",
                            "Keras-2.1.0.tar.gz"]
    assert 'href="https://files.example/k/Keras-2.3.1-py2.py3-none-any.whl#sha256=bb"' in html
    assert 'data-yanked="broken &lt;release&gt;"' in html
    # the bound's own day is excluded from its instant on; a time bound is read as one
    assert _links(page(KERAS, "2019-10-09")) == ["Keras-2.0.8-py2.py3-none-any.whl", "Keras-2.1.0.tar.gz"]
    assert "Keras-2.3.1" in page(KERAS, "2019-10-09T19:00:00Z")
    later = page(KERAS, "2023-01-01")
    assert 'data-requires-python="&gt;=3.7"' in later and "keras-2.10.0" in later


def test_page__a_wheel_built_later_for_a_release_of_the_time__listed_with_it() -> None:
    """kaggle-diabetic-retinopathy (corpus19 dev): numpy 1.9.2 (sdist, March 2015) got manylinux1
    wheels in 2016. Under a 2015 bound its release is of the time, so its wheels are too (a
    compiled 2015 sdist past the builds' time otherwise); a release of 2016 stays out, and the
    wheel floor keeps the bound, as the project has a wheel of a release of the time."""
    from pyrepro.dateindex import wheel_floor

    numpy = {"name": "numpy", "files": [
        {"filename": "numpy-1.9.2.tar.gz", "url": "https://x/numpy-1.9.2.tar.gz", "upload-time": "2015-03-01T10:00:00Z"},
        {"filename": "numpy-1.9.2-cp27-cp27mu-manylinux1_x86_64.whl", "url": "https://x/a.whl",
         "upload-time": "2016-04-20T10:00:00Z"},
        {"filename": "numpy-1.11.0-cp27-cp27mu-manylinux1_x86_64.whl", "url": "https://x/b.whl",
         "upload-time": "2016-03-27T10:00:00Z"}]}
    assert _links(page(numpy, "2015-08-14")) == ["numpy-1.9.2.tar.gz", "numpy-1.9.2-cp27-cp27mu-manylinux1_x86_64.whl"]
    assert wheel_floor(numpy, "2015-08-14", "2.7") == "2015-08-14"
    assert _links(page(numpy, "2015-02-01")) == []


@given(st.dates(min_value=dt.date(2015, 1, 1), max_value=dt.date(2024, 1, 1)))
def test_page__every_listed_file_is_older_than_the_bound(day: dt.date) -> None:
    listed = set(_links(page(KERAS, day.isoformat())))
    for f in KERAS["files"]:
        assert (f["filename"] in listed) == (f["upload-time"][:10] < day.isoformat())


def test_date_bound_index__served_over_http__pages_and_404s() -> None:
    with DateBoundIndex("2020-01-01", _fake_index({"keras": KERAS})) as url:
        assert url.startswith("http://127.0.0.1:")
        body = urllib.request.urlopen(url + "Keras/", timeout=10).read().decode()  # noqa: S310 (localhost)
        assert _links(body)[-1] == "Keras-2.1.0.tar.gz" and "2.10.0" not in body
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url + "nosuchthing/", timeout=10)  # noqa: S310
        assert err.value.code == 404
    with pytest.raises(RuntimeError):
        DateBoundIndex("2020-01-01").url  # noqa: B018 (not serving)


def test_pip_env__a_date_bounded_index__the_hosts_other_sources_left_out() -> None:
    base = {"PIP_FIND_LINKS": "/opt/wheels", "PIP_EXTRA_INDEX_URL": "file:///opt/pypi", "PIP_CERT": "/c", "HOME": "/h"}
    env = piplock.pip_env(base, "http://127.0.0.1:1/simple/", PIP_CONSTRAINT="/dev/null")
    assert "PIP_FIND_LINKS" not in env and "PIP_EXTRA_INDEX_URL" not in env
    assert env["PIP_CONFIG_FILE"] == piplock.os.devnull and env["PIP_CERT"] == "/c"
    assert piplock.pip_env(base, None) == base  # the default index: the host's settings stand


@pytest.fixture()
def _no_lock_env(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    monkeypatch.setattr(piplock, "resolver_python", lambda python, cache, runner=None: python)


@pytest.mark.usefixtures("_no_lock_env")
def test_lock_request__python_27_date_bounded__pip_reads_the_date_bounded_view(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chemts-logp (corpus10 held): pip on 2.7 took keras 2.10.0 of 2022, a py2.py3 wheel with Python 3
    syntax. A date-bounded attempt of a Python 2 lock gives pip a view of the index with only the
    files uploaded before the bound: keras 2.3.1. The fake pip reads the page it is given, over HTTP."""
    monkeypatch.setattr(lock, "_index", lambda: _fake_index({"keras": KERAS}))
    d = tmp_path / "proj"
    d.mkdir()
    d.joinpath("pyproject.toml").write_text('[project]\nname = "m"\nversion = "0"\nrequires-python = "==2.7.*"\n'
                                            'dependencies = ["keras"]\n\n[tool.pdm]\ndistribution = false\n')
    seen: list[tuple[str, ...]] = []

    def pip(argv, cwd, env):  # type: ignore[no-untyped-def]
        seen.append(tuple(argv))
        if "--index-url" not in argv:
            newest = "keras-2.10.0-py2.py3-none-any.whl"
        else:
            assert env["PIP_CONFIG_FILE"] == piplock.os.devnull and "PIP_FIND_LINKS" not in env
            body = urllib.request.urlopen(argv[argv.index("--index-url") + 1] + "keras/", timeout=10).read().decode()  # noqa: S310
            newest = [n for n in _links(body) if n.endswith(".whl")][-1]
        (Path(argv[argv.index("--dest") + 1]) / newest).write_bytes(newest.encode())
        return Completed(tuple(argv), 0, "Successfully downloaded", "")

    runner = FakeRunner().on([str(PY2), "-m", "pip", "download"], pip)
    req = lock.LockRequest("m", d, "2.7", submitted=dt.date(2019, 12, 31))
    out = lock.lock_request(req, runner=runner, python_exe=PY2, start="date-bounded")
    assert out.category == 2 and out.strategy == "date-bounded"
    assert lock.read_lock_versions((d / "pdm.lock").read_text()) == {"keras": "2.3.1"}
    assert any("nothing newer than 2020-01-01" in f and "pip read a view of the index" in f for f in out.fidelity)
    # as declared, pip reads the real index, and the record says no bound shaped it
    out2 = lock.lock_request(req, runner=runner, python_exe=PY2, start="as-declared")  # asked for: no bound
    assert "--index-url" not in seen[-1] and lock.read_lock_versions((d / "pdm.lock").read_text()) == {"keras": "2.10.0"}
    assert any("no date bound" in f for f in out2.fidelity)


def test_wheel_floor__a_compiled_project_with_no_wheel_before_the_bound__up_to_its_first_wheel() -> None:
    """diagnose-heart (corpus12 dev, Python 2.7 bounded by 2015-08-14): scikit-image 0.11.3 was an
    sdist whose setup.py imports scipy, and no manylinux wheel existed yet. A project with no wheel
    for this Python before the bound but one later is served up to that first wheel; an sdist-only
    project (Lasagne) and one with a wheel before the bound keep the bound."""
    from pyrepro.dateindex import DateBoundIndex, wheel_floor
    from pyrepro.index import wheel_fits as fits_here

    def f(name: str, day: str) -> dict:
        return {"filename": name, "url": f"https://x/{name}", "hashes": {"sha256": "a" * 64},
                "upload-time": f"{day}T10:00:00.000000Z"}

    skimage = {"name": "scikit-image", "files": [
        f("scikit-image-0.11.3.tar.gz", "2015-03-24"),
        f("scikit_image-0.12.3-cp35-cp35m-manylinux1_x86_64.whl", "2016-04-01"),
        f("scikit_image-0.12.3-cp27-cp27mu-manylinux1_x86_64.whl", "2016-04-02"),
        f("scikit_image-0.13.0-cp27-cp27mu-manylinux1_x86_64.whl", "2017-03-01")]}
    assert wheel_floor(skimage, "2015-08-14", "2.7").startswith("2016-04-02T10:00:00")
    assert wheel_floor(skimage, "2015-08-14", "3.5").startswith("2016-04-01T10:00:00")
    lasagne = {"name": "lasagne", "files": [f("Lasagne-0.1.tar.gz", "2015-08-13")]}
    assert wheel_floor(lasagne, "2015-08-14", "2.7") == "2015-08-14"
    six = {"name": "six", "files": [f("six-1.9.0-py2.py3-none-any.whl", "2015-01-02"),
                                    f("six-1.10.0-py2.py3-none-any.whl", "2015-10-07")]}
    assert wheel_floor(six, "2015-08-14", "2.7") == "2015-08-14"
    # pure-Python sdists before the bound, and only pure-Python wheels after it (keras 0.2.0 of
    # 2015, whose first wheel, 2.0.x, asks for TensorFlow: skip-thoughts, corpus14 held)
    keras = {"name": "keras", "files": [f("Keras-0.2.0.tar.gz", "2015-10-11"),
                                        f("Keras-2.0.5-py2.py3-none-any.whl", "2017-06-20")]}
    assert wheel_floor(keras, "2015-10-12", "2.7") == "2015-10-12"
    assert fits_here("numpy-1.11.0-cp27-cp27mu-manylinux1_x86_64.whl", "2.7")
    assert not fits_here("numpy-1.11.0-cp27-cp27m-macosx_10_6_intel.whl", "2.7")
    assert not fits_here("tables-3.3.0-cp27-cp27m-manylinux1_x86_64.whl", "2.7")  # the narrow (UCS2) build's
    assert not fits_here("numpy-1.11.0.tar.gz", "2.7")

    class FakeIndex:
        def _project(self, name: str) -> dict:
            return {"scikit-image": skimage, "lasagne": lasagne}[name]

    served = DateBoundIndex("2015-08-14", FakeIndex(), python="2.7")._answer("/simple/scikit-image/")[1]  # type: ignore[arg-type]
    assert "scikit_image-0.12.3-cp27" in served and "0.13.0" not in served and "0.11.3" in served
    plain = DateBoundIndex("2015-08-14", FakeIndex())._answer("/simple/scikit-image/")[1]  # type: ignore[arg-type]
    assert "0.12.3" not in plain
