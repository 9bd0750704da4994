"""``python -m bench [--quick] [--threads N] [--markdown FILE] [workload ...]``"""

from __future__ import annotations

import argparse
import importlib
import sys

from bench.common import machine, versions

WORKLOADS = {
    "metadata": "bench.bench_metadata",
    "dense": "bench.bench_dense",
    "sharded": "bench.bench_sharding",
    "cast": "bench.bench_cast",
    "codecs": "bench.bench_codecs",
    "bits": "bench.bench_bits",
    "convert": "bench.bench_convert",
    "remote": "bench.bench_remote",
    "plugin": "bench.bench_plugin",
    "hdf5": "bench.bench_hdf5",
    "rectilinear": "bench.bench_rectilinear",
    "native": "bench.bench_native",
    "locks": "bench.bench_locks",
    "cache": "bench.bench_cache",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench")
    p.add_argument("workloads", nargs="*", default=[], help=f"any of {sorted(WORKLOADS)} (default: all)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repeat: a smoke run for CI")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--peers", default=None, help="comma-separated peers to run beside zarrcy (workloads that support it)")
    p.add_argument("--markdown", default=None, help="append the result tables to this file")
    p.add_argument("--codec", default=None,
                   help="comma-separated inner codecs (workloads that support it: sharded gzip|zstd|blosc, native)")
    args = p.parse_args(argv)
    names = args.workloads or list(WORKLOADS)
    print(f"machine: {machine()}\nversions: {versions()}\ncommand: python -m bench {' '.join(argv or sys.argv[1:])}")
    tables = []
    for name in names:
        try:
            mod = importlib.import_module(WORKLOADS[name])
        except ModuleNotFoundError as e:
            if e.name == WORKLOADS[name]:
                print(f"[{name}] not available yet")
                continue
            raise
        if not hasattr(mod, "run"):
            continue
        print(f"[{name}]")
        kwargs = {"quick": args.quick}
        if args.threads and "threads" in mod.run.__code__.co_varnames:
            kwargs["threads"] = args.threads
        if args.peers and "peers" in mod.run.__code__.co_varnames:
            kwargs["peers"] = args.peers.split(",")
        if args.codec and "codec" in mod.run.__code__.co_varnames:
            kwargs["codec"] = args.codec.split(",")
        tables.append(mod.run(**kwargs))
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\nmachine: {machine()}\n\nversions: {versions()}\n\n")
            for t in tables:
                if t is not None:
                    f.write(t.markdown() + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
