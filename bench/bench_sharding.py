"""Sharded workload: uint16 (512, 512, 512), shards (256, 256, 256), inner chunks
(32, 32, 32), inner codecs bytes + gzip(1), index codecs bytes + crc32c at the end.

Side by side in one process: zarrcy, zarr-python 3.4 (default pipeline), zarr-python +
zarrs pipeline, tensorstore.  Ops: full write; full read; 1000 random single-element
reads; 200 random aligned 32^3 reads; 200 random unaligned 40^3 reads; 200 random
single-inner-chunk writes into existing shards; selections with steps and index arrays
(issue 13): ``a[::64, :, :]``, ``a[::100, ::100, ::100]``, ``a.oindex[[3, 200, 450], :, :]``
and 200 strided boxes ``[z:z+64:4, y:y+64:4, x:x+64:4]``.  For those, rows "inner chunks
decoded" give zarrcy's count per op (``zarrcy.codecs.sharding.decode_stats``) next to
the number the selection touches.  Implementations are interleaved: each op runs once per
implementation in turn, one warm-up round and ``repeat`` timed rounds (median reported),
so load changes hit all of them alike.  ``--peers zarrcy,tensorstore`` limits the peers;
``ZARRCY_BENCH_ZARRS_OPS=write,read`` runs the zarrs pipeline on those ops only (the issue's
full-read / full-write goals compare against it; its partial writes take minutes).
``--quick``: (128,)*3 / (64,)*3 / (16,)*3 and a tenth
of the random ops.  ``--codec gzip|zstd|blosc`` (issue 21) picks the inner compressor:
gzip level 1 (default), zstd level 0 without checksum (zarr-python's default), blosc
lz4 level 5 with byte shuffle; the limit rows are then the native engine's 2-thread
decode / encode of the same inner chunks.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from typing import Any, Callable

import numpy as np

from bench.common import Table, scratch_dir


def _data(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    r = np.arange(n, dtype=np.uint16)
    a = (r[:, None, None] * 3 + r[None, :, None] * 2 + r[None, None, :]) % np.uint16(4096)
    a += rng.integers(0, 16, a.shape, dtype=np.uint16)
    return a


#: inner compressors by ``--codec`` name: (v3 codec JSON, the engine's chain of it)
CODECS: dict[str, dict[str, Any]] = {
    "gzip": {"name": "gzip", "configuration": {"level": 1}},
    "zstd": {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
    "blosc": {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2,
                                                 "blocksize": 0}},
}


def run(quick: bool = False, threads: int | None = None, peers: list[str] | None = None,
        codec: list[str] | None = None) -> Table:
    import zarrcy
    from zarrcy.codecs import codec_from_dict

    cname = (codec or ["gzip"])[0]
    cjson = CODECS[cname]
    label = {"gzip": "gzip 1", "zstd": "zstd 0", "blosc": "blosc lz4 5 + shuffle"}[cname]

    n, shard, inner = (128, 64, 16) if quick else (512, 256, 32)
    nops = 20 if quick else 200
    npoints = 100 if quick else 1000
    repeat = 1 if quick else 3
    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    data = _data(n)
    mb = data.nbytes / 2**20
    rng = np.random.default_rng(1)
    points = [tuple(int(x) for x in rng.integers(0, n, 3)) for _ in range(npoints)]
    aligned = [tuple(int(x) * inner for x in rng.integers(0, n // inner, 3)) for _ in range(nops)]
    unal = 40 if not quick else 20
    unaligned = [tuple(int(x) for x in rng.integers(0, n - unal, 3)) for _ in range(nops)]
    writes = [tuple(int(x) * inner for x in rng.integers(0, n // inner, 3)) for _ in range(nops)]
    block = (rng.integers(0, 4096, (inner,) * 3)).astype(np.uint16)

    all_peers = ["zarrcy", "zarr-python", "zarrs", "tensorstore"]
    wanted = [p for p in all_peers if peers is None or p in peers or p == "zarrcy"]
    table = Table(
        f"Sharded workload: uint16 {data.shape}, shards ({shard},)*3, inner ({inner},)*3, {label} "
        f"({mb:.0f} MiB), {threads} threads",
        wanted,
    )
    d = scratch_dir()
    paths = {k: f"{d}/{k}" for k in ("zarrcy", "zarr-python", "zarrs", "tensorstore")}
    strided = [tuple(int(x) for x in rng.integers(0, n - 64, 3)) for _ in range(nops)]
    oidx = [3, 200, 450] if not quick else [3, 50, 110]
    step_ops = {
        "every 64th plane a[::64, :, :]": (slice(None, None, 64), slice(None), slice(None)),
        "sample grid a[::100, ::100, ::100]": (slice(None, None, 100),) * 3,
    }
    # per implementation: (full write, get, set, orthogonal get), filled below
    impls: dict[str, tuple[Callable[[], None], Callable[[Any], Any], Callable[[Any, Any], None], Callable[[Any], Any]]] = {}

    # -- zarrcy ----------------------------------------------------------------------
    def zc_write() -> None:
        a = zarrcy.create_array(paths["zarrcy"], shape=data.shape, dtype=data.dtype, chunks=(inner,) * 3,
                                shards=(shard,) * 3, compressors=[codec_from_dict(cjson, "compressors[0]")],
                                overwrite=True)
        a[...] = data

    zc_write()
    zc = zarrcy.open_array(paths["zarrcy"], mode="r+")
    assert np.array_equal(zc[...], data)

    def zc_set(sel: Any, v: Any) -> None:
        zc[sel] = v

    impls["zarrcy"] = (zc_write, lambda s: zc[s], zc_set, lambda s: zc.oindex[s])
    decoded = _decoded_counts(zc, step_ops, oidx, strided, inner,
                              {"points": points, "aligned": [tuple(slice(o, o + inner) for o in c) for c in aligned],
                               "unaligned": [tuple(slice(o, o + unal) for o in c) for c in unaligned]})

    # -- zarr-python (+ zarrs) -------------------------------------------------------------
    try:
        import zarr
        from zarr.codecs import BloscCodec as ZBlosc
        from zarr.codecs import GzipCodec as ZGzip
        from zarr.codecs import ZstdCodec as ZZstd

        zcodec = {"gzip": lambda: ZGzip(level=1), "zstd": lambda: ZZstd(level=0, checksum=False),
                  "blosc": lambda: ZBlosc(cname="lz4", clevel=5, shuffle="shuffle", typesize=2)}[cname]

        def zp_impl(name: str, cfg: dict[str, Any]) -> None:
            path = paths[name]

            def write() -> None:
                with zarr.config.set(cfg):
                    a = zarr.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(inner,) * 3,
                                          shards=(shard,) * 3, compressors=[zcodec()], overwrite=True)
                    a[...] = data

            write()
            with zarr.config.set(cfg):
                z = zarr.open_array(path, mode="r+")

            def get(sel: Any) -> Any:
                with zarr.config.set(cfg):
                    return z[sel]

            def oget(sel: Any) -> Any:
                with zarr.config.set(cfg):
                    return z.oindex[sel]

            def zset(sel: Any, v: Any) -> None:
                with zarr.config.set(cfg):
                    z[sel] = v

            impls[name] = (write, get, zset, oget)

        if "zarr-python" in wanted:
            zp_impl("zarr-python", {})
        if "zarrs" in wanted:
            try:
                import zarrs  # noqa: F401

                zp_impl("zarrs", {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True})
            except ImportError:
                pass
    except ImportError:
        pass

    # -- tensorstore -------------------------------------------------------------------------
    if "tensorstore" in wanted:
        try:
            import tensorstore as ts

            bytes_le = {"name": "bytes", "configuration": {"endian": "little"}}
            spec = {
                "driver": "zarr3",
                "kvstore": {"driver": "file", "path": paths["tensorstore"]},
                "metadata": {
                    "shape": list(data.shape), "data_type": "uint16",
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard] * 3}},
                    "codecs": [{"name": "sharding_indexed", "configuration": {
                        "chunk_shape": [inner] * 3,
                        "codecs": [bytes_le, cjson],
                        "index_codecs": [bytes_le, {"name": "crc32c"}],
                        "index_location": "end"}}],
                },
            }

            def ts_write() -> None:
                t = ts.open(spec, create=True, delete_existing=True).result()
                t.write(data).result()

            ts_write()
            tt = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": paths["tensorstore"]}},
                         context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})).result()

            def tset(sel: Any, v: Any) -> None:
                tt[sel].write(v).result()

            impls["tensorstore"] = (ts_write, lambda s: tt[s].read().result(), tset,
                                    lambda s: tt.oindex[s].read().result())
        except ImportError:
            pass

    # -- the ops, implementations interleaved round by round (one warm-up round) -------------
    def op_fns(write: Callable[[], None], get: Callable[[Any], Any], put: Callable[[Any, Any], None],
               oget: Callable[[Any], Any]) -> dict[str, Callable[[], Any]]:
        fns: dict[str, Callable[[], Any]] = {"write": write, "read": lambda: get((slice(None),) * 3)}
        fns["points"] = lambda: [get(p) for p in points]
        fns["aligned"] = lambda: [get(tuple(slice(o, o + inner) for o in c)) for c in aligned]
        fns["unaligned"] = lambda: [get(tuple(slice(o, o + unal) for o in c)) for c in unaligned]
        def chunk_writes() -> None:
            for c in writes:
                put(tuple(slice(o, o + inner) for o in c), block)

        def getter_of(sel: Any) -> Callable[[], Any]:
            return lambda: get(sel)

        fns["chunk_writes"] = chunk_writes
        for name, sel in step_ops.items():
            fns[name] = getter_of(sel)
        fns["oindex"] = lambda: oget((oidx, slice(None), slice(None)))
        fns["strided"] = lambda: [get(tuple(slice(o, o + 64, 4) for o in c)) for c in strided]
        return fns

    fns = {name: op_fns(*impl) for name, impl in impls.items()}
    zarrs_ops = set(os.environ["ZARRCY_BENCH_ZARRS_OPS"].split(",")) if os.environ.get("ZARRCY_BENCH_ZARRS_OPS") else None
    res: dict[str, dict[str, float | None]] = {op: {} for op in next(iter(fns.values()))}
    for op in res:
        times: dict[str, list[float]] = {name: [] for name in fns}
        refused: set[str] = set()
        for rnd in range(repeat + 1):
            for name in fns:
                if name in refused or (name == "zarrs" and zarrs_ops is not None and op not in zarrs_ops):
                    continue
                t0 = time.perf_counter()
                try:
                    fns[name][op]()
                except Exception:  # noqa: BLE001 - a peer's limitation (zarrs strict: no steps), n/a
                    refused.add(name)
                    continue
                if rnd:  # round 0 warms up
                    times[name].append(time.perf_counter() - t0)
        for name in fns:
            res[op][name] = None if name in refused or not times[name] else statistics.median(times[name])

    table.add(f"full write {mb:.0f} MiB", res["write"])
    table.add(f"full read {mb:.0f} MiB", res["read"])
    table.add(f"{npoints} random single-element reads", res["points"])
    table.add(f"{nops} random aligned {inner}^3 reads", res["aligned"])
    table.add(f"{nops} random unaligned {unal}^3 reads", res["unaligned"])
    table.add(f"{nops} random inner-chunk writes", res["chunk_writes"])
    for name in step_ops:
        table.add(name, res[name])
    table.add(f"a.oindex[{oidx}, :, :]", res["oindex"])
    table.add(f"{nops} strided boxes [z:z+64:4, y:y+64:4, x:x+64:4]", res["strided"])
    for name, (got, touched) in decoded.items():
        table.add(f"inner chunks decoded: {name} (touched: {touched})", {"zarrcy": got}, unit="")
    # issue 13's yardsticks: the full read / write against the codec alone on 2 threads
    dec_limit, enc_limit = codec_limits(data, inner, repeat, cjson)
    table.add(f"limit: 2-thread {label} decode, same inner chunks, no I/O", {"zarrcy": dec_limit})
    table.add(f"limit: 2-thread {label} encode, same inner chunks, no I/O", {"zarrcy": enc_limit})
    # the floor of each partial read: the inner chunks it decodes, each at the mean cost of
    # one inner chunk in the 2-thread decode limit (whole-chunk decodes; zarrcy's bounded
    # zstd prefix / blosc block decodes of a point can go below it)
    per_chunk = dec_limit / float((n // inner) ** 3) if dec_limit else None
    if per_chunk:
        for name, (got, _) in decoded.items():
            table.add(f"decode floor: {name} ({got} inner chunks x 2-thread mean)", {"zarrcy": got * per_chunk})
    zc_read, zc_write_t = res["read"].get("zarrcy"), res["write"].get("zarrcy")
    if zc_read and dec_limit:
        table.add("full read / 2-thread decode limit", {"zarrcy": round(zc_read / dec_limit, 2)}, unit="x")
    if zc_write_t and enc_limit:
        table.add("full write / 2-thread encode limit", {"zarrcy": round(zc_write_t / enc_limit, 2)}, unit="x")
    shutil.rmtree(d, ignore_errors=True)
    return table


def codec_limits(data: np.ndarray, inner: int, repeat: int, cjson: dict[str, Any]) -> tuple[float, float]:
    """Median seconds to encode and to decode every inner chunk of ``data`` with the
    codec alone (the native engine: libdeflate / libzstd / c-blosc) on 2 threads (half the
    chunks each, a thread's own contexts and buffer): no I/O, no gather or scatter, no
    index -- the limits the full write and read goals are stated against."""
    from concurrent.futures import ThreadPoolExecutor

    from zarrcy.codecs import _native, codec_from_dict
    from zarrcy.codecs._base import ArraySpec

    spec = ArraySpec((inner,) * 3, data.dtype, 0)
    step = codec_from_dict(cjson, "codec").evolve(spec).native_step(spec)
    chain = _native.chain_of([step])
    assert chain is not None, "the native engine has no library for this codec"
    n = data.shape[0] // inner
    chunks = [np.ascontiguousarray(data[i * inner:(i + 1) * inner, j * inner:(j + 1) * inner,
                                        k * inner:(k + 1) * inner]).view(np.uint8).reshape(-1)
              for i in range(n) for j in range(n) for k in range(n)]
    cb = chunks[0].nbytes
    encoded: list[Any] = [None] * len(chunks)
    half = len(chunks) // 2
    parts = [range(0, half), range(half, len(chunks))]

    def encode(part: range) -> None:
        for i in part:
            encoded[i] = _native.encode(chain, chunks[i])

    def decode(part: range) -> None:
        buf = np.empty(cb, np.uint8)
        for i in part:
            _native.decode_into(chain, encoded[i], buf)

    def timed(fn: Callable[[range], None]) -> float:
        times = []
        with ThreadPoolExecutor(2) as pool:
            for rnd in range(repeat + 1):
                t0 = time.perf_counter()
                list(pool.map(fn, parts))
                if rnd:
                    times.append(time.perf_counter() - t0)
        return statistics.median(times)

    enc = timed(encode)
    dec = timed(decode)
    return dec, enc


def _decoded_counts(zc: Any, step_ops: dict[str, Any], oidx: list[int], strided: list[Any],
                    inner: int, lists: dict[str, list[Any]] | None = None) -> dict[str, tuple[int, int]]:
    """Inner chunks zarrcy decodes per op, next to the number the selection touches
    (distinct inner chunks per dimension, multiplied).  ``lists``: ops made of many
    selections (points, boxes), counted over all their reads."""
    from zarrcy.codecs.sharding import decode_stats

    def touched(sel: Any) -> int:
        t = 1
        for s, size in zip(sel, zc.shape):
            idx = np.arange(size)[s] if isinstance(s, slice) else np.asarray(s)
            t *= len(np.unique(idx // inner))
        return t

    out: dict[str, tuple[int, int]] = {}
    decode_stats.reset(True)
    try:
        for name, sel in step_ops.items():
            decode_stats.reset(True)
            zc[sel]
            out[name] = (decode_stats.decoded, touched(sel))
        sel = (oidx, slice(None), slice(None))
        decode_stats.reset(True)
        zc.oindex[sel]
        out[f"a.oindex[{oidx}, :, :]"] = (decode_stats.decoded, touched(sel))
        decode_stats.reset(True)
        total = 0
        for c in strided:
            sel = tuple(slice(o, o + 64, 4) for o in c)
            zc[sel]
            total += touched(sel)
        out["strided boxes (all reads)"] = (decode_stats.decoded, total)
        for name, sels in (lists or {}).items():
            decode_stats.reset(True)
            total = 0
            for sel in sels:
                zc[sel]
                total += touched(tuple(slice(x, x + 1) if isinstance(x, int) else x for x in sel))
            out[f"{name} (all reads)"] = (decode_stats.decoded, total)
    finally:
        decode_stats.reset(False)
    return out


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
