"""Helpers that pyrepro's patches add to model scripts (on PYTHONPATH at run time).

This file runs inside model environments (Python >= 3.8), so it uses the standard library
only at import time; jarvis-tools and pandas are imported inside the functions that need
them. The uniform interface (docs/conventions.md):

    --benchmark NAME  --test  --benchmarks-dir DIR  --data-dir DIR  --output-dir DIR

with defaults from $PYREPRO_BENCHMARKS_DIR, $PYREPRO_DATA_DIR and the current directory.
"""

import argparse
import csv
import io
import json
import os
import sys
import zipfile

# Datasets that appear as benchmark prefixes (longest match wins in split_benchmark).
KNOWN_DATASETS = (
    "dft_3d", "dft_2d", "qe_tb", "ssub", "supercon_chem", "mag2d_chem", "snumat", "hmof",
    "qm9_std_jctc", "qm9_dgl", "megnet", "oqmd_3d_no_cfid", "mp_3d_2020", "c2db", "hopv",
    "tinnet_N", "tinnet_O", "tinnet_OH", "halide_peroskites", "cccbdb", "vacancydb",
    "dft_3d_2021", "arxiv", "pubchem", "ocp10k", "ocp100k", "ocp_all", "surfacedb",
)


def add_uniform_args(parser, default_benchmark):
    """Add the five uniform flags to an existing argparse parser."""
    parser.add_argument("--benchmark", default=default_benchmark,
                        help="benchmark name, e.g. dft_3d_exfoliation_energy (default: %(default)s)")
    parser.add_argument("--test", action="store_true",
                        help="cheap run (few epochs/estimators): proves executability, not results")
    parser.add_argument("--benchmarks-dir", default=os.environ.get("PYREPRO_BENCHMARKS_DIR"),
                        help="folder holding <benchmark>.json.zip (default: $PYREPRO_BENCHMARKS_DIR)")
    parser.add_argument("--data-dir", default=os.environ.get("PYREPRO_DATA_DIR"),
                        help="jarvis-tools dataset folder (store_dir) (default: $PYREPRO_DATA_DIR)")
    parser.add_argument("--output-dir", default=".",
                        help="where the predictions zip is written (default: current directory)")
    return parser


def _finish(ns, parser):
    if not ns.benchmarks_dir:
        parser.error("--benchmarks-dir is required (or set PYREPRO_BENCHMARKS_DIR)")
    ns.benchmarks_dir = os.path.abspath(ns.benchmarks_dir)
    if ns.data_dir:
        ns.data_dir = os.path.abspath(ns.data_dir)
    else:
        ns.data_dir = os.path.abspath(os.path.join(".", "jarvis-data"))
    os.makedirs(ns.data_dir, exist_ok=True)
    ns.output_dir = os.path.abspath(ns.output_dir)
    os.makedirs(ns.output_dir, exist_ok=True)
    # Not a flag: "fixture" or "jarvis" as set by the runner ("" when run by hand).
    ns.data_kind = os.environ.get("PYREPRO_DATA_KIND", "")
    return ns


def parse_known_uniform_args(default_benchmark, argv=None, description=None):
    """Like parse_uniform_args, but returns (namespace, unknown arguments)."""
    parser = add_uniform_args(argparse.ArgumentParser(description=description), default_benchmark)
    ns, rest = parser.parse_known_args(argv)
    return _finish(ns, parser), rest


def parse_uniform_args(default_benchmark, argv=None, description=None):
    """Parse the uniform flags (absolute paths; output dir created)."""
    parser = add_uniform_args(argparse.ArgumentParser(description=description), default_benchmark)
    return _finish(parser.parse_args(argv), parser)


def split_benchmark(benchmark):
    """'dft_3d_exfoliation_energy' -> ('dft_3d', 'exfoliation_energy')."""
    best = None
    for ds in KNOWN_DATASETS:
        if benchmark.startswith(ds + "_") and (best is None or len(ds) > len(best)):
            best = ds
    if best is None:
        raise ValueError(f"cannot split benchmark {benchmark!r} into dataset and property; "
                         f"known datasets: {', '.join(KNOWN_DATASETS)}")
    return best, benchmark[len(best) + 1:]


def benchmark_path(benchmarks_dir, benchmark):
    path = os.path.join(benchmarks_dir, benchmark + ".json.zip")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"benchmark file {benchmark}.json.zip not found in {benchmarks_dir} (pass --benchmarks-dir)")
    return path


def load_benchmark(benchmarks_dir, benchmark):
    """The benchmark split: {'train': {id: target}, 'val': {...}, 'test': {...}}."""
    with zipfile.ZipFile(benchmark_path(benchmarks_dir, benchmark)) as z:
        data = json.loads(z.read(benchmark + ".json"))
    data.setdefault("val", {})
    return data


def _accepts_store_dir(fn):
    import inspect

    try:
        return "store_dir" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def read_jarvis_zip(js_tag, url, store_dir):
    """What jarvis-tools' get_request_data(js_tag, url, store_dir) does, for versions without store_dir.

    Reads member ``js_tag`` of ``<store_dir>/<js_tag>.zip``; when the zip is missing it is
    downloaded from ``url`` first (atomically: a partial download never becomes the zip).
    """
    path = os.path.join(store_dir, js_tag + ".zip")
    if not os.path.isfile(path):
        import urllib.request

        os.makedirs(store_dir, exist_ok=True)
        tmp = path + ".part"
        try:
            with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
                while True:
                    block = r.read(1 << 20)
                    if not block:
                        break
                    f.write(block)
        except Exception as exc:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise OSError(f"pyrepro: {js_tag}.zip is not in {store_dir} and downloading it from {url} failed ({exc}); "
                          "put the file there (pyrepro data fetch) or use fixture data") from exc
        os.replace(tmp, path)
    print("Loading the zipfile...")
    with zipfile.ZipFile(path) as z:
        data = json.loads(z.read(js_tag))
    print("Loading completed.")
    return data


def install_store_dir(module, default_store=None):
    """Make ``module`` (jarvis.db.figshare) honour store_dir on every jarvis-tools version.

    * versions with ``store_dir`` (2023.x and later): calls without it get ``default_store``;
    * versions without it (2022.9.16 and older): ``get_request_data``/``data`` are replaced by
      equivalents that accept ``store_dir`` and read/download ``<store_dir>/<js_tag>.zip``
      (default ``default_store``; with neither, the original package-folder behaviour).
    Idempotent. Returns the module.
    """
    if getattr(module, "_pyrepro_store_dir", None) is not None:
        if default_store:
            module._pyrepro_store_dir = default_store
        return module
    import functools

    module._pyrepro_store_dir = default_store or ""
    orig_get = getattr(module, "get_request_data", None)
    orig_data = getattr(module, "data", None)
    if orig_get is None or orig_data is None:
        return module

    if _accepts_store_dir(orig_get):
        def with_default(fn, position):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                store = module._pyrepro_store_dir
                if store and kwargs.get("store_dir") is None and len(args) <= position:
                    os.makedirs(store, exist_ok=True)
                    kwargs["store_dir"] = store
                return fn(*args, **kwargs)
            return inner

        # store_dir is the 3rd parameter of get_request_data() and the 2nd of data().
        module.get_request_data = with_default(orig_get, 2)
        if _accepts_store_dir(orig_data):
            module.data = with_default(orig_data, 1)
        return module

    @functools.wraps(orig_get)
    def get_request_data(js_tag="jdft_2d-4-26-2020.json",
                         url="https://ndownloader.figshare.com/files/22471019", store_dir=None):
        store = store_dir or module._pyrepro_store_dir
        if not store:
            return orig_get(js_tag=js_tag, url=url)
        return read_jarvis_zip(js_tag, url, store)

    @functools.wraps(orig_data)
    def data(dataset="dft_2d", store_dir=None):
        db_info = module.get_db_info()
        if dataset not in db_info:
            raise ValueError("Check DB name options.")
        url, js_tag, message, reference = db_info[dataset][:4]
        print(message)
        print("Reference:" + reference)
        return module.get_request_data(js_tag=js_tag, url=url, store_dir=store_dir)

    module.get_request_data = get_request_data
    module.data = data
    return module


def _figshare():
    import jarvis.db.figshare as module

    return install_store_dir(module)


def jarvis_data(name, data_dir):
    """jarvis.db.figshare.data(name, store_dir=data_dir), also on jarvis-tools without store_dir."""
    return _figshare().data(name, store_dir=data_dir)


def jarvis_request_data(js_tag, url, data_dir):
    """jarvis.db.figshare.get_request_data(js_tag, url, store_dir=data_dir), on any jarvis-tools."""
    return _figshare().get_request_data(js_tag=js_tag, url=url, store_dir=data_dir)


def predictions_name(benchmark):
    """'dft_3d_exfoliation_energy' -> 'AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae'."""
    dataset, prop = split_benchmark(benchmark)
    return f"AI-SinglePropertyPrediction-{prop}-{dataset}-test-mae"


def write_predictions(output_dir, benchmark, rows, columns=("id", "prediction")):
    """Write <name>.csv inside <name>.csv.zip in output_dir; returns the zip path.

    ``rows`` is an iterable of tuples, or a pandas DataFrame (its ``columns`` are used).
    """
    if hasattr(rows, "itertuples") and hasattr(rows, "columns"):
        columns = tuple(str(c) for c in rows.columns)
        rows = list(rows.itertuples(index=False, name=None))
    name = predictions_name(benchmark)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    n = 0
    for row in rows:
        w.writerow(row)
        n += 1
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, name + ".csv.zip")
    tmp = path + ".tmp"
    # a fixed timestamp and mode: equal predictions give byte-equal archives (and equal hashes)
    info = zipfile.ZipInfo(name + ".csv", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(info, buf.getvalue())
    os.replace(tmp, path)
    print(f"pyrepro: wrote {n} predictions to {path}")
    return path


def populate_folder(benchmark, benchmarks_dir, data_dir, output_path, id_tag="jid", file_format="poscar"):
    """Our minimal replacement for the leaderboard's jarvis_populate_data.py.

    Writes one structure file per id and id_prop.csv in train, val, test order, plus
    dataset_info.json with n_train/n_val/n_test, from the benchmark json and the jarvis-tools
    dataset read from data_dir. Returns {'train': n, 'val': n, 'test': n}.
    """
    from jarvis.core.atoms import Atoms

    dataset, prop = split_benchmark(benchmark)
    split = load_benchmark(benchmarks_dir, benchmark)
    split = {part: {str(k): v for k, v in split.get(part, {}).items()} for part in ("train", "val", "test")}
    wanted = set(split["train"]) | set(split["val"]) | set(split["test"])
    info = {}
    for entry in jarvis_data(dataset, data_dir):
        key = str(entry[id_tag])
        if key in wanted:
            info[key] = Atoms.from_dict(entry["atoms"])
    missing = sorted(wanted - set(info))
    if missing:
        raise KeyError(f"{len(missing)} benchmark ids are not in the {dataset} dataset in {data_dir}, "
                       f"e.g. {missing[:3]}")
    os.makedirs(output_path, exist_ok=True)
    with open(os.path.join(output_path, "id_prop.csv"), "w") as f:
        for part in ("train", "val", "test"):
            for i, target in split[part].items():
                f.write(f"{i},{target}\n")
                if file_format == "poscar":
                    info[i].write_poscar(os.path.join(output_path, str(i)))
                elif file_format == "cif":
                    info[i].write_cif(filename=os.path.join(output_path, str(i) + ".cif"))
                else:
                    raise ValueError(file_format)
    counts = {part: len(split[part]) for part in ("train", "val", "test")}
    # Same keys as the leaderboard script writes (jarvis dumpjson = json.dumps, no indent).
    b_info = {"benchmark_file": predictions_name(benchmark), "dataset": dataset, "output_path": output_path,
              "prop": prop, "methods": "AI", "id_tag": id_tag, "n_train": counts["train"],
              "n_val": counts["val"], "n_test": counts["test"]}
    with open(os.path.join(output_path, "dataset_info.json"), "w") as f:
        json.dump(b_info, f)
    print(f"pyrepro: populated {output_path}: {counts}")
    return counts


def test_scale(full, test_value, test):
    """The knob value for this run: test_value in --test mode, else the original full value."""
    return test_value if test else full


# ------------------------------------------------------------------ seeds observed at run time

#: Seed-setting functions, per module, wrapped right after the module is imported when
#: PYREPRO_SEEDS_FILE is set: a seed a library sets from its own config default (alignn's
#: TrainingConfig random_seed=123 -> random.seed, np.random.seed, torch.manual_seed) is seen
#: where no static reading of the entry script can find it.
SEED_FUNCTIONS = {
    "random": ("seed",),
    "numpy.random": ("seed",),
    "torch": ("manual_seed",),
    "torch.cuda": ("manual_seed", "manual_seed_all"),
    "tensorflow": ("random.set_seed", "keras.utils.set_random_seed"),
    "keras.utils": ("set_random_seed",),
    "dgl": ("seed",),
    "pytorch_lightning": ("seed_everything",),
    "lightning": ("seed_everything",),
    "lightning.pytorch": ("seed_everything",),
    "transformers": ("set_seed",),
}
_SEEN = [0]


def _record_seed(path, qualname, args, kwargs):
    import json

    if _SEEN[0] >= 200:
        return
    _SEEN[0] += 1
    value = args[0] if args else next(iter(kwargs.values()), None)
    frame = sys._getframe(2)
    caller = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"function": qualname, "value": value if value is None or isinstance(value, (int, float, str))
                            else repr(value)[:80], "caller": caller}) + "\n")


def install_seed_recorder(module, path):
    """Wrap ``module``'s seed functions (SEED_FUNCTIONS) so each call is appended to ``path``
    as a JSON line (function, value, caller file:line), then runs as before."""
    import functools

    for dotted in SEED_FUNCTIONS.get(module.__name__, ()):
        owner = module
        *parents, attr = dotted.split(".")
        try:
            for p in parents:
                owner = getattr(owner, p)
            fn = getattr(owner, attr)
        except Exception:
            continue
        if getattr(fn, "_pyrepro_seed_wrapped", False) or not callable(fn):
            continue
        qualname = f"{module.__name__}.{dotted}"

        def make(fn=fn, qualname=qualname):
            @functools.wraps(fn)
            def seeded(*args, **kwargs):
                try:  # noqa: SIM105 (the recorder must never break the model)
                    _record_seed(path, qualname, args, kwargs)
                except Exception:
                    pass
                return fn(*args, **kwargs)

            seeded._pyrepro_seed_wrapped = True
            return seeded

        try:
            setattr(owner, attr, make())
        except Exception:
            continue
