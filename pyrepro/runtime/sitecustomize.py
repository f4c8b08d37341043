"""pyrepro runtime: make jarvis-tools keep its downloads in $PYREPRO_DATA_DIR.

jarvis-tools' figshare ``data()``/``get_request_data()`` save into their package folder (old
versions) or a user cache (new ones) unless ``store_dir=`` is passed, and 2022.9.16 (the
version matformer pins) has no ``store_dir`` at all. Library code that calls them (alignn,
matformer) cannot be patched per call, so when PYREPRO_DATA_DIR is set this installs a
meta-path hook that, right after ``jarvis.db.figshare`` is first imported, makes both functions
default ``store_dir`` to it (``pyrepro_runtime.install_store_dir``, same folder).

This file shadows any other ``sitecustomize`` (nixpkgs' Python uses one for NIX_PYTHONPATH),
so it runs the next one on sys.path afterwards. It never breaks interpreter start-up: any
failure leaves jarvis-tools untouched.
"""

import contextlib
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _wrap(module):
    store = os.environ.get("PYREPRO_DATA_DIR")
    if not store:
        return
    _runtime().install_store_dir(module, store)


def _runtime():
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    import pyrepro_runtime

    return pyrepro_runtime


def _seeds(module):
    path = os.environ.get("PYREPRO_SEEDS_FILE")
    if path:
        _runtime().install_seed_recorder(module, path)


_SEED_MODULES = ("numpy.random", "torch", "torch.cuda", "tensorflow", "keras.utils", "dgl", "pytorch_lightning",
                 "lightning", "lightning.pytorch", "transformers")  # as pyrepro_runtime.SEED_FUNCTIONS


def _hooks(fullname):
    out = []
    if fullname == "jarvis.db.figshare" and os.environ.get("PYREPRO_DATA_DIR"):
        out.append(_wrap)
    if fullname in _SEED_MODULES and os.environ.get("PYREPRO_SEEDS_FILE"):
        out.append(_seeds)
    return out


class _Finder:
    """A meta-path hook that wraps jarvis.db.figshare (store_dir) and the seed functions of the
    modules in _SEED_MODULES (PYREPRO_SEEDS_FILE) right after they are imported."""

    def find_spec(self, fullname, path=None, target=None):
        hooks = _hooks(fullname)
        if not hooks:
            return None
        try:
            import importlib.machinery

            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        except Exception:
            return None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            for hook in hooks:
                try:
                    hook(module)
                except Exception as exc:  # never break the model because of this convenience
                    sys.stderr.write("pyrepro sitecustomize: %s hook not installed: %r\n" % (hook.__name__, exc))

        loader.exec_module = exec_module
        return spec


def _chain():
    """Run the sitecustomize this one shadows (e.g. nixpkgs' NIX_PYTHONPATH handling)."""
    import importlib.machinery
    import importlib.util

    here = os.path.realpath(_HERE)
    rest = [p for p in sys.path if os.path.realpath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or not spec.origin:
        return
    if os.path.realpath(os.path.dirname(spec.origin)) == here:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_pyrepro_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


def _start():
    if os.environ.get("PYREPRO_DATA_DIR") or os.environ.get("PYREPRO_SEEDS_FILE"):
        with contextlib.suppress(Exception):
            sys.meta_path.insert(0, _Finder())
    if os.environ.get("PYREPRO_SEEDS_FILE"):
        with contextlib.suppress(Exception):
            import random as _random

            _seeds(_random)
    try:
        _chain()
    except Exception as exc:
        sys.stderr.write("pyrepro sitecustomize: chained sitecustomize failed: %r\n" % (exc,))


# Python 2 (a Python 2 submission's environment) compiles this file but has none of the hooks'
# machinery (importlib.machinery, contextlib.suppress): there it does nothing
if sys.version_info[0] >= 3:
    _start()
