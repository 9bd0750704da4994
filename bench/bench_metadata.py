"""Metadata workload (issue: foundation): hierarchy root/g0..g9/a0..a19 of float32 (100,)
arrays, chunks (10,), on a LocalStore; create, open 200 by path, list recursively."""

from __future__ import annotations

import shutil

from bench.common import Table, scratch_dir, timeit

NG, NA = 10, 20


def run(quick: bool = False) -> Table:
    import zarrcy

    ng, na = (2, 5) if quick else (NG, NA)
    repeat = 1 if quick else 5
    peers = ["zarrcy", "zarr-python", "tensorstore"]
    table = Table(f"Metadata workload: {ng + 1} groups + {ng * na} arrays (LocalStore)", peers)
    paths = [f"g{i}/a{j}" for i in range(ng) for j in range(na)]
    d = scratch_dir()

    def fresh(name: str) -> str:
        p = f"{d}/{name}"
        shutil.rmtree(p, ignore_errors=True)
        return p

    # -- create ---------------------------------------------------------------------
    def zc_create() -> None:
        root = zarrcy.open_group(fresh("zc"), mode="w")
        for i in range(ng):
            g = root.create_group(f"g{i}")
            for j in range(na):
                g.create_array(f"a{j}", shape=(100,), dtype="float32", chunks=(10,))

    res: dict[str, float | None] = {"zarrcy": timeit(zc_create, repeat)}
    try:
        import zarr

        def zp_create() -> None:
            root = zarr.open_group(fresh("zp"), mode="w")
            for i in range(ng):
                g = root.create_group(f"g{i}")
                for j in range(na):
                    g.create_array(f"a{j}", shape=(100,), dtype="float32", chunks=(10,))

        res["zarr-python"] = timeit(zp_create, repeat)
    except ImportError:
        res["zarr-python"] = None
    try:
        import tensorstore as ts

        def ts_create() -> None:
            p = fresh("ts")
            ctx = ts.Context()
            # tensorstore has no group API: write the group documents, create arrays with ts.open
            import json, os

            os.makedirs(p, exist_ok=True)
            with open(f"{p}/zarr.json", "w") as f:
                json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
            for i in range(ng):
                os.makedirs(f"{p}/g{i}", exist_ok=True)
                with open(f"{p}/g{i}/zarr.json", "w") as f:
                    json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
                futs = [
                    ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{p}/g{i}/a{j}"},
                             "metadata": {"shape": [100], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
                                          "data_type": "float32"}}, create=True, context=ctx)
                    for j in range(na)
                ]
                for fu in futs:
                    fu.result()

        res["tensorstore"] = timeit(ts_create, repeat)
    except ImportError:
        res["tensorstore"] = None
    table.add("create hierarchy", res)

    # -- open 200 by path (sequential) ----------------------------------------------------
    zc_root, zp_root = f"{d}/zc", f"{d}/zp"
    res = {"zarrcy": timeit(lambda: [zarrcy.open_array(zc_root, path=p, mode="r") for p in paths], repeat)}
    try:
        import zarr

        res["zarr-python"] = timeit(lambda: [zarr.open_array(zp_root, path=p, mode="r") for p in paths], repeat)
    except ImportError:
        res["zarr-python"] = None
    try:
        import tensorstore as ts

        ts_root = f"{d}/ts"
        ctx = ts.Context()
        res["tensorstore"] = timeit(
            lambda: [ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{ts_root}/{p}"}}, context=ctx).result() for p in paths],
            repeat,
        )
    except ImportError:
        res["tensorstore"] = None
    table.add(f"open {len(paths)} arrays by path", res)

    # -- list recursively -------------------------------------------------------------
    res = {"zarrcy": timeit(lambda: list(zarrcy.open_group(zc_root, mode="r").walk()), repeat)}
    try:
        import zarr

        res["zarr-python"] = timeit(lambda: list(zarr.open_group(zp_root, mode="r").members(max_depth=None)), repeat)
    except ImportError:
        res["zarr-python"] = None
    try:
        import tensorstore as ts

        def ts_list() -> None:
            kv = ts.KvStore.open({"driver": "file", "path": f"{d}/ts/"}).result()
            keys = kv.list().result()
            assert keys

        res["tensorstore"] = timeit(ts_list, repeat)
    except ImportError:
        res["tensorstore"] = None
    table.add("list hierarchy recursively", res)
    shutil.rmtree(d, ignore_errors=True)
    return table
