"""The ``zarrcy`` command line: demo, info, tree, check, cast-check, convert."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

__all__ = ["main"]


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def stored_chunk_objects(node: Any) -> tuple[int, int]:
    """(number, total bytes) of the stored chunk (or shard) objects of an array."""
    store = node.store
    prefix = node._prefix
    decode = node.metadata.chunk_key_encoding.decode_chunk_key
    grid = [-(-s // c) if s else 0 for s, c in zip(node.shape, node.metadata.chunk_grid.chunk_shape)]
    n = total = 0
    getsize = getattr(store, "getsize", None)
    for key in store.list_prefix(prefix):
        coords = decode(key[len(prefix):])
        if coords is None or len(coords) != len(grid) or not all(0 <= c < g for c, g in zip(coords, grid)):
            continue
        size = getsize(key) if getsize is not None else None
        if size is None:
            value = store.get(key)
            size = 0 if value is None else len(value)
        n += 1
        total += int(size)
    return n, total


def _fill_value_json(node: Any) -> str:
    m = node.metadata
    if getattr(m, "zarr_format", 3) in (1, 2):
        value = getattr(m, "fill_value_json", m.fill_value)
    else:
        from zarrcy.metadata.fill_value import fill_value_to_json

        value = fill_value_to_json(m.data_type, m.fill_value)
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def array_info(node: Any) -> str:
    """What ``zarrcy info`` prints for an array: format, types, shapes, JSON fill value,
    human sizes, stored size and ratio; shards and inner chunks counted separately."""
    m = node.metadata
    fmt = getattr(m, "zarr_format", 3)
    doc = m.to_json()
    n_objects = math.prod(-(-s // c) if s else 0 for s, c in zip(node.shape, m.chunk_grid.chunk_shape))
    stored_n, stored_bytes = stored_chunk_objects(node)
    rows: list[tuple[str, str]] = [
        ("Type", "Array"),
        ("Zarr format", str(fmt)),
        ("Path", f"/{node.path}"),
        ("Store", str(node.store.url)),
        ("Data type", json.dumps(doc.get("data_type", doc.get("dtype")))),
        ("Shape", str(tuple(node.shape))),
    ]
    if node.shards is not None:
        per_shard = math.prod(s // c for s, c in zip(node.shards, node.chunks))
        rows += [
            ("Shard shape", str(tuple(node.shards))),
            ("Inner chunk shape", str(tuple(node.chunks))),
            ("Shards", f"{n_objects} ({stored_n} stored)"),
            ("Inner chunks", f"{per_shard} per shard, {per_shard * n_objects} in all"),
        ]
    else:
        rows += [("Chunk shape", str(tuple(node.chunks))), ("Chunks", f"{n_objects} ({stored_n} stored)")]
    rows.append(("Fill value", _fill_value_json(node)))
    if fmt == 3:
        rows.append(("Codecs", json.dumps(doc.get("codecs"))))
    else:
        rows.append(("Filters", json.dumps(doc.get("filters"))))
        rows.append(("Compressor", json.dumps(doc.get("compressor"))))
        rows.append(("Order", str(doc.get("order"))))
    if getattr(m, "dimension_names", None) is not None:
        rows.append(("Dimension names", json.dumps(list(m.dimension_names))))
    nbytes = int(node.nbytes)
    rows.append(("Size", f"{_human(nbytes)} ({nbytes:,} bytes decoded)"))
    ratio = f", ratio {nbytes / stored_bytes:.2f}" if stored_bytes else ""
    rows.append(("Stored", f"{_human(stored_bytes)} ({stored_bytes:,} bytes in {stored_n} object(s){ratio})"))
    attrs = dict(m.attributes)
    if attrs:
        rows.append(("Attributes", json.dumps(attrs, default=str)))
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(w)} : {v}" for k, v in rows)


def _cmd_info(args: argparse.Namespace) -> int:
    from zarrcy.api import open as api_open
    from zarrcy.nodes.array import Array

    node = api_open(args.url, path=args.path, mode="r")
    if isinstance(node, Array):
        print(array_info(node))
    else:
        fmt = getattr(node.metadata, "zarr_format", 3)
        print(f"Type        : Group\nZarr format : {fmt}\nPath        : /{node.path}\nStore       : {node.store.url}")
        print(f"Attributes  : {json.dumps(node.attrs.asdict(), default=str)}")
        print(f"Members     : {', '.join(node.keys()) or '(none)'}")
    return 0


def _cmd_tree(args: argparse.Namespace) -> int:
    from zarrcy.api import open as api_open
    from zarrcy.nodes.array import Array

    node = api_open(args.url, path=args.path, mode="r")
    if isinstance(node, Array):
        print(f"/{node.path} {node.shape} {node.dtype}")
    else:
        print(node.tree())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from zarrcy.cli.check import check_store

    return check_store(args.url, data=args.data, as_json=args.json, path=args.path)


def _cmd_demo(args: argparse.Namespace) -> int:
    from zarrcy.cli.demo import run_demo

    return run_demo(args.output, size=args.size)


def _cmd_cast_check(argv: Sequence[str]) -> int:
    from zarrcy.casting import cast_check_main

    return cast_check_main(list(argv))


def _version() -> str:
    from zarrcy._version import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zarrcy", description="Zarr v3 with typed Cython hot paths")
    p.add_argument("--version", action="version", version=f"zarrcy {_version()}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    d = sub.add_parser("demo", help="write, read back and verify a sample hierarchy")
    d.add_argument("--output", default="zarrcy-demo.zarr",
                   help="where to write (default ./zarrcy-demo.zarr); must not exist, be empty, or be an earlier "
                        "demo output (nothing else is ever deleted)")
    d.add_argument("--size", choices=("small", "default"), default="default", help="small: a few MB (CI)")
    d.set_defaults(fn=_cmd_demo)
    for name, fn, h in (("info", _cmd_info, "describe an array or group"), ("tree", _cmd_tree, "print the hierarchy")):
        s = sub.add_parser(name, help=h)
        s.add_argument("url")
        s.add_argument("--path", default=None, help="node inside the store (default: its root)")
        s.set_defaults(fn=fn)
    c = sub.add_parser("check", help="validate every metadata document (and optionally every chunk)")
    c.add_argument("url")
    c.add_argument("--path", default=None, help="check only this node and what is below it")
    c.add_argument("--data", action="store_true",
                   help="also decode every stored chunk, and say per array whether its codecs detect bit rot "
                        "(a checksum: crc32c, zstd with checksum, gzip...) or not, with a command for a checksummed copy")
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.set_defaults(fn=_cmd_check)
    sub.add_parser("cast-check", help="report what a cast_value/scale_offset chain does to data (zarrcy cast-check -h)")
    sub.add_parser("convert", help="convert Zarr v1/v2/v3, HDF5 or NetCDF-4 (one file, or many along "
                                   "--concat-dim) into sharded/quantized Zarr v3 (zarrcy convert -h)")
    return p


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "cast-check":  # has its own parser (zarrcy.casting)
        return _cmd_cast_check(argv[1:])
    if argv and argv[0] == "convert":  # has its own parser (zarrcy.convert.cli)
        from zarrcy.convert import convert_main

        return convert_main(argv[1:])
    p = build_parser()
    args = p.parse_args(argv)
    if getattr(args, "fn", None) is None:  # plain `zarrcy`: the help, not an error
        p.print_help()
        return 0
    from zarrcy.errors import ZarrcyError

    try:
        return args.fn(args)
    except ZarrcyError as e:
        print(f"zarrcy {args.cmd}: error: {e}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        rc = _run(argv)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return rc
    except BrokenPipeError:
        # `zarrcy ... --json | head`: the reader went away; exit quietly (Python docs,
        # "Note on SIGPIPE": point stdout at devnull so the exit-time flush is silent)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (tests)
            pass
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the closed pipe


if __name__ == "__main__":
    sys.exit(main())
