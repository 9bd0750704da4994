"""cast_value / scale_offset hot paths vs cast-value-rs and numpy, in one process.

Input: 128 MiB of float64 (16 Mi elements; ``--quick``: 1 MiB), single-threaded kernels
(the array layer parallelises across chunks).  Rows (the goals in notes/C_cast.md):

* cast f64 -> uint8, nearest-even, clamp                      (peers: cast-value-rs, numpy astype)
* same + scalar_map NaN -> 255 (1 % NaN)                       (peer: cast-value-rs)
* cast f64 -> float32, towards-zero / nearest-even            (peer: cast-value-rs)
* cast int32 -> int16, wrap                                    (peers: cast-value-rs, numpy astype)
* scale_offset encode f64                                      (peer: numpy ``(x - o) * s``)
* fused scale_offset(-10, 0.1) + cast uint8 + NaN map          (peer: numpy + cast-value-rs)

Run: ``python -m bench cast`` or ``python bench/bench_cast.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import Table, timeit


def run(quick: bool = False) -> Table:
    import cast_value_rs as cvr

    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.cast_value import CastValueCodec, prepare_cast
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
              ["zarrcy", "cast-value-rs", "numpy"])

    p = prepare_cast(np.float64, "uint8", "nearest-even", "clamp")
    t.add("cast f64->u8 RNE clamp", {
        "zarrcy": timeit(lambda: p.run(x, out8), repeat),
        "cast-value-rs": timeit(lambda: cvr.cast_array_into(x, out8, rounding_mode="nearest-even",
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

    so = ScaleOffsetCodec(-10, 0.1)
    spec = ArraySpec((n,), np.dtype("float64"), np.float64(0))
    t.add("scale_offset encode f64", {
        "zarrcy": timeit(lambda: so.encode(q, spec), repeat),
        "cast-value-rs": None,
        "numpy": timeit(lambda: (q - (-10.0)) * 0.1, repeat)})

    cv = CastValueCodec("uint8", "nearest-even", None, (("NaN", 0),), ((0, "NaN"),))
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
    return t


if __name__ == "__main__":
    tab = run(quick="--quick" in sys.argv)
    print(tab.markdown())
