"""The flake's image outputs (``legacyPackages.<system>.images.<name>``, nix/image.nix), evaluated
offline with the builtins-only stand-ins of tests/nixflake/stubs.nix.

What this proves: the REAL flake.nix wires one ``dockerTools.buildLayeredImage`` per model on
every system the model is offered on; its entry point is the model's app (the program ``nix run
.#<name>`` runs); its contents are that package and the record; the record and the labels carry
model.toml's source pin, the lock's sha256 and the reviewed patches' sha256, equal to what the
local backend's ``pyrepro export`` writes. What it cannot prove: that nixpkgs' dockerTools accepts
these arguments and builds the image (nixpkgs cannot be fetched here), or that the image runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pyrepro import __version__, export, nixeval, patches, proc
from pyrepro.registry import load_registry
from tests.conftest import have

needs_nix = pytest.mark.skipif(not have("nix-instantiate"), reason="nix is not installed")


@needs_nix
def test_flake_images__stub_inputs__one_per_model_app_entrypoint_and_record(repo_root: Path) -> None:
    done = proc.run(["nix-instantiate", "--eval", "--strict", "--json",
                     str(repo_root / "tests" / "nixflake" / "stub-images.nix")], env=nixeval._env({}))
    got = json.loads(done.stdout)
    reg = load_registry(repo_root / "models")
    assert sorted(got) == ["aarch64-linux", "x86_64-linux"]
    for out in got.values():
        assert sorted(out["images"]) == out["models"] and out["models"]  # an image wherever a model is offered
        for name, img in out["images"].items():
            spec = reg.get(name)
            assert img["stub"] == "buildLayeredImage" and img["name"] == f"pyrepro/{name}"
            # the entry point is the model's app: the same program as `nix run .#<name>`
            assert img["config"]["Entrypoint"] == [img["app"]] == [f"{img['package']}/bin/{name}"]
            assert img["contents"] == [f"script-{name}", "writeTextDir"]
            assert img["recordPath"] == "pyrepro/record.json"
            env = dict(e.split("=", 1) for e in img["config"]["Env"])
            assert env["PYREPRO_OUTPUT_DIR"] == export.OUTPUT and env["PYREPRO_DATA_DIR"] == export.DATASETS
            assert img["config"]["WorkingDir"] == export.WORK
            for folder in ("tmp", "work", "out", "data/datasets"):
                assert folder in img["extraCommands"].split("\n")[0]
            lock_sha = hashlib.sha256((spec.dir / "pdm.lock").read_bytes()).hexdigest()
            series = [{"file": p.path.name, "sha256": p.sha256}
                      for p in patches.load_series(repo_root / "patches" / name)]
            rec = img["record"]
            assert rec["model"] == name and rec["lock"] == {"file": f"models/{name}/pdm.lock", "sha256": lock_sha}
            assert rec["source"] == {"repository": spec.source.repository, "commit": spec.source.commit,
                                     "subdir": spec.source.subdir, "tree": spec.source.tree}
            assert rec["patches"] == series, name
            assert rec["environment"] == {"backend": "nix", "python": spec.python, "package": img["package"]}
            assert rec["pyrepro"] == {"version": __version__}
            assert rec["image"]["entrypoint"] == img["config"]["Entrypoint"]
            assert rec["image"]["test_args"] == list(spec.test.args)
            labels = img["config"]["Labels"]
            # the labels the local backend's image carries, with the same values
            assert labels["io.pyrepro.lock.sha256"] == lock_sha
            assert labels["org.opencontainers.image.revision"] == spec.source.commit
            assert json.loads(labels["io.pyrepro.patches"]) == [f"{p['file']} {p['sha256']}" for p in series]
            assert labels["io.pyrepro.record"] == export.RECORD and labels["io.pyrepro.backend"] == "nix"
    assert "kgcnn_cgcnn" not in got["aarch64-linux"]["images"]  # offered only where the lock was made for


@needs_nix
def test_image_nix__parses(repo_root: Path) -> None:
    assert nixeval.parse_check([repo_root / "nix" / "image.nix", repo_root / "flake.nix",
                                repo_root / "tests" / "nixflake" / "stub-images.nix"]) == {}
