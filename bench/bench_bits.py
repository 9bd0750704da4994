"""The bitround and packbits codecs (zarrcy/_kernels/_bits.pyx) beside numcodecs / numpy.

Rows (median seconds per batch, interleaved in one process):

* ``bitround f32 / f64 encode``: zarrcy's ``bitround`` codec vs numcodecs' ``BitRound``
  (numpy array arithmetic; the same bits, tested) on a 16 MiB smooth field, keepbits 7;
* ``packbits bool encode / decode``: zarrcy's ``packbits`` vs ``numpy.packbits`` /
  ``unpackbits(bitorder="little")`` (numpy's C loops: the floor for 1-bit elements);
* ``packbits uint4 encode / decode``: 4-bit elements vs the best plain-numpy nibble
  packing (two shifted strided views ORed);
* ``packbits int16 bits 4..11``: a 12-bit window of int16, no numpy equivalent (n/a).

``--quick``: 256 KiB, one repeat (smoke run).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from bench.common import Table, smooth_field, timeit


def run(quick: bool = False) -> Table:
    import numcodecs

    from zarrcy.codecs import ArraySpec
    from zarrcy.codecs.bitround import BitroundCodec
    from zarrcy.codecs.packbits import PackBitsCodec
    from zarrcy.metadata.data_type import parse_data_type

    side, repeat = (256, 1) if quick else (2048, 7)
    table = Table(f"bitround / packbits kernels, {side}x{side} elements (seconds)", ["zarrcy", "numcodecs", "numpy"])

    def spec(a: np.ndarray, name: str) -> ArraySpec:
        dt = parse_data_type(name)
        return ArraySpec(a.shape, dt.dtype, np.zeros((), dt.dtype)[()], dt)

    for name in ("float32", "float64"):
        x = smooth_field((side, side)).astype(name)
        c, s, nc = BitroundCodec(7), spec(x, name), numcodecs.BitRound(7)
        table.add(f"bitround {name} encode", {
            "zarrcy": timeit(lambda: c.encode(x, s), repeat=repeat),
            "numcodecs": timeit(lambda: nc.encode(x), repeat=repeat),
        })

    b = (smooth_field((side, side)) > 0).astype(bool)
    pb, sb = PackBitsCodec(), spec(b, "bool")
    enc = pb.encode(b, sb)
    table.add("packbits bool encode", {"zarrcy": timeit(lambda: pb.encode(b, sb), repeat=repeat),
                                       "numpy": timeit(lambda: np.packbits(b, bitorder="little"), repeat=repeat)})
    table.add("packbits bool decode", {
        "zarrcy": timeit(lambda: pb.decode(enc, sb), repeat=repeat),
        "numpy": timeit(lambda: np.unpackbits(np.frombuffer(enc, np.uint8), bitorder="little").view(bool),
                        repeat=repeat)})

    u4 = (np.arange(side * side) % 16).astype(ml_dtypes.uint4).reshape(side, side)
    su4 = spec(u4, "uint4")
    enc4 = pb.encode(u4, su4)
    raw = u4.reshape(-1).view(np.uint8)

    def np_pack4() -> np.ndarray:
        return raw[0::2] | (raw[1::2] << 4)

    def np_unpack4() -> np.ndarray:
        e = np.frombuffer(enc4, np.uint8)
        out = np.empty(2 * e.size, np.uint8)
        out[0::2] = e & 15
        out[1::2] = e >> 4
        return out

    table.add("packbits uint4 encode", {"zarrcy": timeit(lambda: pb.encode(u4, su4), repeat=repeat),
                                        "numpy": timeit(np_pack4, repeat=repeat)})
    table.add("packbits uint4 decode", {"zarrcy": timeit(lambda: pb.decode(enc4, su4), repeat=repeat),
                                        "numpy": timeit(np_unpack4, repeat=repeat)})
    i16 = (smooth_field((side, side)) * 1000).astype(np.int16)
    p12, s16 = PackBitsCodec("none", 4, 11), spec(i16, "int16")
    enc12 = p12.encode(i16, s16)
    table.add("packbits int16 bits 4..11 encode", {"zarrcy": timeit(lambda: p12.encode(i16, s16), repeat=repeat)})
    table.add("packbits int16 bits 4..11 decode", {"zarrcy": timeit(lambda: p12.decode(enc12, s16), repeat=repeat)})
    return table


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
