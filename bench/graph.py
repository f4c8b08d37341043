"""Time to build, analyse and render a synthetic 1,000-node DAG (target: <= 3 s).

Usage: python bench/graph.py [--nodes 1000] [--format svg]
Prints one line per phase and the total, in seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pyrepro import graph as g


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--fanout", type=int, default=4)
    ap.add_argument("--format", default="svg")
    args = ap.parse_args()
    t0 = time.perf_counter()
    dg = g.synthetic_dag(args.nodes, args.fanout)
    t1 = time.perf_counter()
    data = g.to_json(dg)
    h = g.highlight(dg, f"pkg{args.nodes - 1:05d}")
    red = g.reduce(dg)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        g.render(g.to_dot(dg, h), Path(tmp) / f"bench.{args.format}", args.format)
    t3 = time.perf_counter()
    print(f"nodes {data['counts']['nodes']} edges {data['counts']['edges']} "
          f"reduced_edges {red.graph.number_of_edges()} paths_to_last {h.path_count}")
    print(f"build_s {t1 - t0:.3f}")
    print(f"analyse_s {t2 - t1:.3f}")
    print(f"render_{args.format}_s {t3 - t2:.3f}")
    print(f"total_s {t3 - t0:.3f}")


if __name__ == "__main__":
    main()
