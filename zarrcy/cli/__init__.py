"""The ``zarrcy`` command line: demo, info, tree, check, cast-check, convert."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

__all__ = ["main"]


def _cmd_info(args: argparse.Namespace) -> int:
    import zarrcy

    node = zarrcy.open(args.url, path=args.path, mode="r")
    if isinstance(node, zarrcy.Array):
        print(node.info)
    else:
        print(f"Type  : Group\nPath  : /{node.path}\nStore : {node.store.url}")
        print(f"Attrs : {json.dumps(node.attrs.asdict())}")
        print(f"Members: {', '.join(node.keys()) or '(none)'}")
    return 0


def _cmd_tree(args: argparse.Namespace) -> int:
    import zarrcy

    node = zarrcy.open(args.url, path=args.path, mode="r")
    if isinstance(node, zarrcy.Array):
        print(f"/{node.path} {node.shape} {node.dtype}")
    else:
        print(node.tree())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from zarrcy.cli.check import check_store

    return check_store(args.url, data=args.data, as_json=args.json)


def _cmd_demo(args: argparse.Namespace) -> int:
    from zarrcy.cli.demo import run_demo

    return run_demo(args.output, size=args.size)


def _cmd_cast_check(argv: Sequence[str]) -> int:
    from zarrcy.casting import cast_check_main

    return cast_check_main(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "cast-check":  # has its own parser (zarrcy.casting)
        return _cmd_cast_check(argv[1:])
    if argv and argv[0] == "convert":  # has its own parser (zarrcy.convert.cli)
        from zarrcy.convert import convert_main

        return convert_main(argv[1:])
    p = argparse.ArgumentParser(prog="zarrcy", description="Zarr v3 with typed Cython hot paths")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="write, read back and verify a sample hierarchy")
    d.add_argument("--output", default="zarrcy-demo.zarr", help="where to write (default ./zarrcy-demo.zarr)")
    d.add_argument("--size", choices=("small", "default"), default="default", help="small: a few MB (CI)")
    d.set_defaults(fn=_cmd_demo)
    for name, fn, h in (("info", _cmd_info, "describe an array or group"), ("tree", _cmd_tree, "print the hierarchy")):
        s = sub.add_parser(name, help=h)
        s.add_argument("url")
        s.add_argument("--path", default=None)
        s.set_defaults(fn=fn)
    c = sub.add_parser("check", help="validate every metadata document (and optionally every chunk)")
    c.add_argument("url")
    c.add_argument("--data", action="store_true", help="also decode every stored chunk")
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.set_defaults(fn=_cmd_check)
    sub.add_parser("cast-check", help="report what a cast_value/scale_offset chain does to data")
    sub.add_parser("convert", help="convert Zarr v1/v2/v3 into sharded/quantized v3 (zarrcy convert --help)")
    args = p.parse_args(argv)
    from zarrcy.errors import ZarrcyError

    try:
        return args.fn(args)
    except ZarrcyError as e:
        print(f"zarrcy {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
