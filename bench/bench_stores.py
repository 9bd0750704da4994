"""Store workload: 200 x set / get / range get / list of 1 KB values on a LocalStore,
zarrcy's LocalStore vs zarr-python 3's LocalStore (driven through its sync wrapper,
which is what zarr-python's synchronous API does per call).  Also MemoryStore/ZipStore
for reference.  Tiny on purpose: ``python -m bench.bench_stores`` runs in a second."""

from __future__ import annotations

import shutil

from bench.common import Table, scratch_dir, timeit

N = 200
SIZE = 1024


def run(quick: bool = False) -> Table:
    import os

    from zarrcy.byte_range import RangeRequest
    from zarrcy.storage import LocalStore, MemoryStore, ZipStore

    n = 20 if quick else N
    repeat = 1 if quick else 5
    keys = [f"a/c/{i // 20}/{i % 20}" for i in range(n)]
    value = os.urandom(SIZE)
    peers = ["zarrcy", "zarr-python", "zarrcy-memory", "zarrcy-zip"]
    table = Table(f"Stores: {n} x 1 KB values (LocalStore unless noted)", peers)
    d = scratch_dir("zarrcy-bench-stores-")

    zc = LocalStore(f"{d}/zc")
    mem = MemoryStore()
    zipstore = ZipStore(f"{d}/zc.zip", mode="w")

    def zc_set() -> None:
        for k in keys:
            zc.set(k, value)

    def zc_get() -> None:
        for k in keys:
            zc.get(k)

    def zc_range() -> None:
        r = RangeRequest(100, 64)
        for k in keys:
            zc.get(k, r)

    def zc_list() -> None:
        list(zc.list_prefix("a/"))

    def mem_set() -> None:
        for k in keys:
            mem.set(k, value)

    def mem_get() -> None:
        for k in keys:
            mem.get(k)

    def zip_set() -> None:
        for k in keys:
            zipstore.set(k, value)

    def zip_get() -> None:
        for k in keys:
            zipstore.get(k)

    results: dict[str, dict[str, float | None]] = {
        "set": {"zarrcy": timeit(zc_set, repeat), "zarrcy-memory": timeit(mem_set, repeat)},
        "get": {"zarrcy": timeit(zc_get, repeat), "zarrcy-memory": timeit(mem_get, repeat)},
        "get range (64 B at 100)": {"zarrcy": timeit(zc_range, repeat)},
        "list_prefix": {"zarrcy": timeit(zc_list, repeat)},
    }
    zip_set()  # one warm pass (zip appends: repeated sets grow the archive)
    results["set"]["zarrcy-zip"] = timeit(zip_set, 1, warmup=0)
    results["get"]["zarrcy-zip"] = timeit(zip_get, repeat)
    zipstore.close()

    try:
        from zarr.core.buffer import cpu, default_buffer_prototype
        from zarr.core.sync import sync
        from zarr.storage import LocalStore as ZarrLocalStore

        zp = ZarrLocalStore(f"{d}/zp")
        proto = default_buffer_prototype()
        buf = cpu.Buffer.from_bytes(value)
        from zarr.abc.store import RangeByteRequest

        rr = RangeByteRequest(100, 164)

        def zp_set() -> None:
            for k in keys:
                sync(zp.set(k, buf))

        def zp_get() -> None:
            for k in keys:
                sync(zp.get(k, proto))

        def zp_range() -> None:
            for k in keys:
                sync(zp.get(k, proto, rr))

        async def _alist():
            return [k async for k in zp.list_prefix("a/")]

        def zp_list() -> None:
            sync(_alist())

        results["set"]["zarr-python"] = timeit(zp_set, repeat)
        results["get"]["zarr-python"] = timeit(zp_get, repeat)
        results["get range (64 B at 100)"]["zarr-python"] = timeit(zp_range, repeat)
        results["list_prefix"]["zarr-python"] = timeit(zp_list, repeat)
    except ImportError:
        pass

    for op, r in results.items():
        table.add(op, {p: r.get(p) for p in peers})
    shutil.rmtree(d, ignore_errors=True)
    return table


if __name__ == "__main__":
    import sys

    from bench.common import machine, versions

    print(f"machine: {machine()}\nversions: {versions()}")
    run(quick="--quick" in sys.argv)
