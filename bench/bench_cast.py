"""cast_value / scale_offset hot paths vs cast-value-rs and numpy, in one process.

Input: 128 MiB of float64 (16 Mi elements; ``--quick``: 1 MiB), single-threaded kernels
(the array layer parallelises across chunks).  Rows (the goals in notes/C_cast.md):

* cast f64 -> uint8, nearest-even, clamp                      (peers: cast-value-rs, numpy astype)
* same + scalar_map NaN -> 255 (1 % NaN)                       (peer: cast-value-rs)
* cast f64 -> float32, towards-zero / nearest-even            (peer: cast-value-rs)
* cast int32 -> int16, wrap                                    (peers: cast-value-rs, numpy astype)
* scale_offset encode f64                                      (peer: numpy ``(x - o) * s``)
* fused scale_offset(-10, 0.1) + cast uint8 + NaN map          (peer: numpy + cast-value-rs)
* array level: quantize workload float64 (4096, 4096), 1 % NaN, chunks (1024, 1024),
  scale_offset(0, 10) -> cast_value(uint8, clamp, NaN <-> 255) -> bytes -> gzip(1), fill NaN,
  write and read through a LocalStore in a scratch dir      (peer: zarr-python 3.4 + cast-value-rs)

Kernel rows are measured both ways where the peer allows it: into a preallocated output
(``cast_array_into``) and allocating the output (``cast_array``; marked "alloc").

Run: ``python -m bench cast`` or ``python bench/bench_cast.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import Table, scratch_dir, timeit


def run(quick: bool = False) -> Table:
    import cast_value_rs as cvr

    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.cast_value import CastValueCodec, ScalarMap, prepare_cast
    from zarrcy.codecs.scale_offset import ScaleOffsetCodec

    n = (1 << 17) if quick else (1 << 24)
    repeat = 1 if quick else 5
    rng = np.random.default_rng(0)
    x = rng.uniform(-20, 280, n)
    xn = x.copy()
    xn[rng.random(n) < 0.01] = np.nan
    q = rng.uniform(0, 2540, n)
    q[rng.random(n) < 0.01] = np.nan
    i32 = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    out8 = np.empty(n, np.uint8)
    out16 = np.empty(n, np.int16)
    out32 = np.empty(n, np.float32)

    t = Table("cast_value / scale_offset (128 MiB float64, 1 thread)" if not quick else "cast (quick)",
              ["zarrcy", "cast-value-rs", "numpy", "zarr-python"])

    p = prepare_cast(np.float64, "uint8", "nearest-even", "clamp")
    t.add("cast f64->u8 RNE clamp", {
        "zarrcy": timeit(lambda: p.run(x, out8), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array_into(x, out8, rounding_mode="nearest-even",
                                                            out_of_range_mode="clamp"), repeat),
        "numpy": timeit(lambda: x.astype(np.uint8), repeat)})

    t.add("  (alloc) cast f64->u8 RNE clamp", {
        "zarrcy": timeit(lambda: p.run(x), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array(x, target_dtype="uint8", rounding_mode="nearest-even",
                                                       out_of_range_mode="clamp"), repeat),
        "numpy": timeit(lambda: x.astype(np.uint8), repeat)})

    pm = prepare_cast(np.float64, "uint8", "nearest-even", "clamp", [["NaN", 255]])
    t.add("  + scalar_map NaN->255 (1% NaN)", {
        "zarrcy": timeit(lambda: pm.run(xn, out8), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array_into(xn, out8, rounding_mode="nearest-even",
                                                            out_of_range_mode="clamp",
                                                            scalar_map_entries=[(float("nan"), 255)]), repeat),
        "numpy": None})

    for mode in ("towards-zero", "nearest-even"):
        pf = prepare_cast(np.float64, "float32", mode)
        t.add(f"cast f64->f32 {mode}", {
            "zarrcy": timeit(lambda: pf.run(x, out32), repeat),
            "cast-value-rs": timeit(lambda: cvr.cast_array_into(x, out32, rounding_mode=mode), repeat),
            "numpy": timeit(lambda: x.astype(np.float32), repeat) if mode == "nearest-even" else None})

    pi = prepare_cast(np.int32, "int16", "nearest-even", "wrap")
    t.add("cast i32->i16 wrap", {
        "zarrcy": timeit(lambda: pi.run(i32, out16), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array_into(i32, out16, rounding_mode="nearest-even",
                                                            out_of_range_mode="wrap"), repeat),
        "numpy": timeit(lambda: i32.astype(np.int16), repeat)})
    t.add("  (alloc) cast i32->i16 wrap", {
        "zarrcy": timeit(lambda: pi.run(i32), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array(i32, target_dtype="int16", rounding_mode="nearest-even",
                                                       out_of_range_mode="wrap"), repeat),
        "numpy": timeit(lambda: i32.astype(np.int16), repeat)})

    so = ScaleOffsetCodec(-10, 0.1)
    spec = ArraySpec((n,), np.dtype("float64"), np.float64(0))
    t.add("scale_offset encode f64", {
        "zarrcy": timeit(lambda: so.encode(q, spec), repeat),
        "cast-value-rs": None,
        "numpy": timeit(lambda: (q - (-10.0)) * 0.1, repeat)})

    from zarrcy._kernels._scale_offset import encode_into

    qbuf = np.empty_like(q)

    def np_so_into() -> None:
        np.subtract(q, -10.0, out=qbuf)
        np.multiply(qbuf, 0.1, out=qbuf)

    t.add("  (into) scale_offset encode f64", {
        "zarrcy": timeit(lambda: encode_into(q, qbuf, -10.0, 0.1), repeat),
        "cast-value-rs": None,
        "numpy": timeit(np_so_into, repeat)})

    cv = CastValueCodec("uint8", "nearest-even", None, ScalarMap((("NaN", 0),), ((0, "NaN"),)))
    fused = so.fuse_with(cv)
    assert fused is not None

    def peer() -> None:
        cvr.cast_array((q - (-10.0)) * 0.1, target_dtype="uint8", rounding_mode="nearest-even",
                       scalar_map_entries=[(float("nan"), 0)])

    t.add("fused so(-10,0.1)+cast u8+NaN map", {
        "zarrcy": timeit(lambda: fused.encode(q, spec), repeat),
        "cast-value-rs": timeit(peer, repeat),
        "numpy": None})
    enc = fused.encode(q, spec)
    t.add("  fused decode u8 -> f64", {
        "zarrcy": timeit(lambda: fused.decode(enc, spec), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array(enc, target_dtype="float64", rounding_mode="nearest-even",
                                                       scalar_map_entries=[(0, float("nan"))]) / 0.1 + (-10.0),
                                repeat),
        "numpy": None})
    _array_rows(t, quick, repeat)
    return t


def _array_rows(t: Table, quick: bool, repeat: int) -> None:
    """Quantize workload end to end: zarrcy vs zarr-python 3.4 (cast-value-rs), same zarr.json."""
    import shutil

    import zarrcy

    n = 512 if quick else 4096
    c = 128 if quick else 1024
    rng = np.random.default_rng(2)
    data = rng.uniform(0, 25.5, (n, n))
    data[rng.random((n, n)) < 0.01] = np.nan
    d = scratch_dir()
    try:
        try:
            import zarr
            from zarr.codecs import GzipCodec as ZGzip
            from zarr.codecs.cast_value import CastValue
            from zarr.codecs.scale_offset import ScaleOffset
        except ImportError:
            zarr = None
        meta = {
            "zarr_format": 3, "node_type": "array", "shape": [n, n], "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, c]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "NaN",
            "codecs": [
                {"name": "scale_offset", "configuration": {"offset": 0, "scale": 10}},
                {"name": "cast_value", "configuration": {
                    "data_type": "uint8", "rounding": "nearest-even", "out_of_range": "clamp",
                    "scalar_map": {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}}},
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 1}},
            ],
            "attributes": {},
        }

        def zc_write() -> None:
            a = zarrcy.create_array(f"{d}/zc", metadata=meta, overwrite=True)
            a[...] = data

        write: dict[str, float | None] = {"zarrcy": timeit(zc_write, repeat)}
        zc = zarrcy.open_array(f"{d}/zc", mode="r")
        read: dict[str, float | None] = {"zarrcy": timeit(lambda: zc[...], repeat)}
        if zarr is not None:
            def zp_write() -> None:
                a = zarr.create_array(
                    f"{d}/zp", shape=data.shape, dtype="float64", chunks=(c, c), fill_value=np.nan,
                    filters=[ScaleOffset(offset=0, scale=10),
                             CastValue(data_type="uint8", rounding="nearest-even", out_of_range="clamp",
                                       scalar_map={"encode": [("NaN", 255)], "decode": [(255, "NaN")]})],
                    compressors=[ZGzip(level=1)], overwrite=True)
                a[...] = data

            write["zarr-python"] = timeit(zp_write, repeat)
            zp = zarr.open_array(f"{d}/zp", mode="r")
            read["zarr-python"] = timeit(lambda: zp[...], repeat)
            # same stored bytes and same values both ways
            a, b = zc[...], zp[...]
            assert np.array_equal(a, b, equal_nan=True)
            assert np.array_equal(zarrcy.open_array(f"{d}/zp", mode="r")[...], a, equal_nan=True)
        t.add(f"array quantize f64 {n}^2 write", write)
        t.add(f"array quantize f64 {n}^2 read", read)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    tab = run(quick="--quick" in sys.argv)
    print(tab.markdown())
