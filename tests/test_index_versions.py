"""The index's file listings grouped by version (``WheelIndex._by_version``): the version read
from a file name by splitting agrees with packaging's parse of valid names."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from pyrepro.index import WheelIndex, _version_text

_names = st.from_regex(r"[a-z][a-z0-9]{0,8}(_[a-z0-9]{1,5})?", fullmatch=True)
_versions = st.builds(lambda parts, pre, post, dev: ".".join(map(str, parts)) + pre + post + dev,
                      st.lists(st.integers(0, 2030), min_size=1, max_size=4),
                      st.sampled_from(["", "a1", "b2", "rc3"]), st.sampled_from(["", ".post1"]),
                      st.sampled_from(["", ".dev4"]))
_tags = st.sampled_from(["py3-none-any", "py2.py3-none-any", "cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64",
                         "cp27-cp27mu-manylinux1_x86_64", "cp312-cp312-win_amd64"])


@given(_names, _versions, _tags, st.booleans())
def test_version_text__wheel_names__agrees_with_packaging(name: str, version: str, tag: str, build: bool) -> None:
    fname = f"{name}-{version}-{'1-' if build else ''}{tag}.whl"
    assert Version(_version_text(fname)) == parse_wheel_filename(fname)[1]


@given(_names, _versions, st.sampled_from([".tar.gz", ".zip"]))
def test_version_text__sdist_names__agrees_with_packaging(name: str, version: str, ending: str) -> None:
    fname = f"{name}-{version}{ending}"
    assert Version(_version_text(fname)) == parse_sdist_filename(fname)[1]


def test_version_text__names_without_a_version__empty() -> None:
    for fname in ("README.md", "x.whl", "a-b.whl", "noversion.tar.gz", "-1.0.tar.gz", "pkg-1.0.exe"):
        assert _version_text(fname) == ""


def test_release__files_of_equal_versions_grouped__other_versions_and_bad_names_left_out() -> None:
    """``_release``/``release_files``/``requires_python`` read the grouping: "1.0" and "1.0.0" are
    one release; an old .tar.bz2 sdist counts; a file with no readable version is left out."""
    files = [{"filename": "pkg-1.0.tar.gz", "requires-python": ">=3.6", "hashes": {"sha256": "a"}},
             {"filename": "pkg-1.0.0-py3-none-any.whl", "hashes": {"sha256": "b"}},
             {"filename": "pkg-1.0.1.tar.bz2", "hashes": {"sha256": "c"}},
             {"filename": "pkg-latest.tar.gz"}, "not a dict", {"filename": "pkg-2.0-py3-none-any.whl"}]
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return json.dumps({"files": files}).encode()

    idx = WheelIndex(None, fetch=fetch)
    assert idx.file_hashes("pkg", "1.0") == [("pkg-1.0.tar.gz", "sha256:a"), ("pkg-1.0.0-py3-none-any.whl", "sha256:b")]
    assert idx.requires_python("pkg", "1.0.0") == ">=3.6"
    assert idx.release_files("pkg", "1.0.1") == ["pkg-1.0.1.tar.bz2"]
    assert idx.release_files("pkg", "3.0") is None and idx.file_hashes("pkg", "not-a-version") == []
    assert len(asked) == 1  # the listing is read once per Index
