"""pyrepro runtime: make jarvis-tools keep its downloads in $PYREPRO_DATA_DIR.

jarvis-tools' figshare ``data()``/``get_request_data()`` save into their package folder (old
versions) or a user cache (new ones) unless ``store_dir=`` is passed. Library code that calls
them (alignn, matformer) cannot be patched per call, so when PYREPRO_DATA_DIR is set this
wraps both functions, on first import of ``jarvis.db.figshare``, to default ``store_dir`` to
it. It never breaks interpreter start-up: any failure leaves jarvis-tools untouched.
"""

import os
import sys


def _wrap(module):
    store = os.environ.get("PYREPRO_DATA_DIR")
    if not store or getattr(module, "_pyrepro_wrapped", False):
        return
    import functools

    def default_store(fn, position):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if kwargs.get("store_dir") is None and len(args) <= position:
                os.makedirs(store, exist_ok=True)
                kwargs["store_dir"] = store
            return fn(*args, **kwargs)
        return inner

    # store_dir is the 2nd parameter of data() and the 3rd of get_request_data().
    for name, position in (("data", 1), ("get_request_data", 2)):
        fn = getattr(module, name, None)
        if fn is not None:
            setattr(module, name, default_store(fn, position))
    module._pyrepro_wrapped = True


class _Finder:
    """A meta-path hook that wraps jarvis.db.figshare right after it is imported."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jarvis.db.figshare":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                _wrap(module)
            except Exception:  # never break the model because of this convenience
                pass

        loader.exec_module = exec_module
        return spec


if os.environ.get("PYREPRO_DATA_DIR"):
    try:
        sys.meta_path.insert(0, _Finder())
    except Exception:
        pass
