"""The bytes codec on U<n>/S<n> chunks (and whole pipelines) against the slow references
in conftest.py: hypothesis values, both byte orders, decode/decode_into/pipeline paths,
code-unit validation on arbitrary stored bits, threads."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.bytes import BytesCodec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CastError, CorruptChunkError
from zarrcy.metadata.data_type import from_numpy

ENDIANS = ["little", "big"]


def _spec(shape: tuple[int, ...], dtype: str) -> ArraySpec:
    dt = np.dtype(dtype)
    return ArraySpec(shape, dt, np.zeros((), dt)[()], from_numpy(dt))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 6), endian=st.sampled_from(ENDIANS))
def test_utf32_codec_matches_reference(ref, data, n: int, endian: str) -> None:
    values = data.draw(st.lists(ref.texts(n), min_size=0, max_size=12))
    arr = np.array(values, dtype=f"U{n}").reshape(len(values))
    spec = _spec(arr.shape, f"U{n}")
    codec = BytesCodec(endian=endian)  # type: ignore[arg-type]
    encoded = bytes(codec.encode(arr, spec))
    assert encoded == ref.encode_utf32(values, n, endian)
    assert codec.decode(encoded, spec).tolist() == values
    out = np.empty(arr.shape, dtype=f"U{n}")
    assert codec.decode_into(bytearray(encoded), out, spec)
    assert out.tolist() == values
    # read-only input, several byte orders of the same decoded values
    ro = np.frombuffer(encoded, dtype=np.uint8)
    assert codec.decode(memoryview(ro), spec).tolist() == values


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 7))
def test_ntb_codec_matches_reference(ref, data, n: int) -> None:
    values = data.draw(st.lists(ref.blobs(n), min_size=0, max_size=12))
    arr = np.array(values, dtype=f"S{n}").reshape(len(values))
    spec = _spec(arr.shape, f"S{n}")
    codec = BytesCodec(endian=None).evolve(spec)
    encoded = bytes(codec.encode(arr, spec))
    assert encoded == ref.encode_ntb(values, n)
    assert codec.decode(encoded, spec).tolist() == values
    assert ref.decode_ntb(encoded, n) == values


@settings(max_examples=80, deadline=None)
@given(units=st.lists(st.one_of(st.integers(0, 0x10FFFF), st.integers(0xD800, 0xDFFF),
                                st.integers(0x110000, 0xFFFFFFFF)), min_size=6, max_size=6),
       endian=st.sampled_from(ENDIANS))
def test_utf32_arbitrary_code_units(ref, units: list[int], endian: str) -> None:
    """Any stored bits: decoded exactly like the reference, or CorruptChunkError naming
    the element where the reference fails."""
    n = 3
    buf = np.array(units, dtype="<u4" if endian == "little" else ">u4").tobytes()
    spec = _spec((2,), f"U{n}")
    codec = BytesCodec(endian=endian)  # type: ignore[arg-type]
    try:
        want = ref.decode_utf32(buf, n, endian)
    except ValueError as e:
        bad = e.args[0]
        for fn in (lambda: codec.decode(buf, spec), lambda: codec.decode_into(buf, np.empty(2, f"U{n}"), spec)):
            with pytest.raises(CorruptChunkError, match=f"element {bad}"):
                fn()
        return
    assert codec.decode(buf, spec).tolist() == want


@pytest.mark.parametrize("endian", ENDIANS)
@pytest.mark.parametrize("unit", [0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF])
def test_invalid_units_through_the_pipeline(endian: str, unit: int) -> None:
    """Every decode path of a pipeline (generic, zero-copy, decompress-into-output,
    transposed, sharded) refuses code units that are not Unicode scalar values."""
    spec = _spec((2, 2), "U2")
    order = "<u4" if endian == "little" else ">u4"
    good = np.array([[65, 0, 66, 67], [0x1F600, 0, 0, 0]], dtype=order).reshape(-1).tobytes()
    bad = bytearray(good)
    bad[12:16] = np.array([unit], dtype=order).tobytes()
    chains = [
        [{"name": "bytes", "configuration": {"endian": endian}}],
        [{"name": "bytes", "configuration": {"endian": endian}}, {"name": "gzip", "configuration": {"level": 1}}],
        [{"name": "bytes", "configuration": {"endian": endian}}, {"name": "zstd", "configuration": {"level": 1}}],
        [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": endian}}],
    ]
    for chain in chains:
        p = CodecPipeline.from_codecs(chain, spec)
        # encode the good values, then put the bad unit into the raw bytes and re-encode the bytes stage only
        values = np.array([["A", "BC"], ["\U0001F600", ""]], dtype="U2")
        enc = bytes(p.encode(values))
        assert p.decode(enc).tolist() == values.tolist()
        raw_bad = bytes(bad) if chain[0]["name"] != "transpose" else None
        if raw_bad is None:  # transposed: stored order is the transpose
            t = np.frombuffer(good, dtype=order).reshape(2, 2, 2).transpose(1, 0, 2).copy()
            t[1, 1, 0] = unit  # element (row 1, col 1) of the transposed chunk
            raw_bad = t.tobytes()
        for bb in chain[1:]:
            if bb["name"] == "gzip":
                import gzip as _gz

                raw_bad = _gz.compress(raw_bad)
            elif bb["name"] == "zstd":
                import numcodecs

                raw_bad = bytes(numcodecs.Zstd(level=1).encode(raw_bad))
        with pytest.raises(CorruptChunkError, match="UTF-32"):
            p.decode(raw_bad)
        with pytest.raises(CorruptChunkError, match="UTF-32"):
            p.decode_into(raw_bad, np.empty((2, 2), "U2"))


def test_wrong_chunk_size_is_corrupt() -> None:
    spec = _spec((3,), "U2")
    codec = BytesCodec(endian="little")
    for size in (0, 23, 25, 4):
        with pytest.raises(CorruptChunkError, match="24 bytes"):
            codec.decode(b"\x00" * size, spec)
    spec_s = _spec((3,), "S2")
    with pytest.raises(CorruptChunkError, match="6 bytes"):
        BytesCodec(endian=None).decode(b"abcde", spec_s)


def test_lone_surrogates_refused_on_encode() -> None:
    arr = np.array(["ok", "a\ud800"], dtype="U2")
    with pytest.raises(CastError, match="element 1"):
        BytesCodec(endian="little").encode(arr, _spec((2,), "U2"))


def test_threads_decode_the_same(ref) -> None:
    rng = np.random.default_rng(3)
    values = [ref.TEXTS[i] for i in rng.integers(0, len(ref.TEXTS), 4000)]
    n = max(map(len, ref.TEXTS))
    spec = _spec((4000,), f"U{n}")
    for endian in ENDIANS:
        codec = BytesCodec(endian=endian)  # type: ignore[arg-type]
        enc = ref.encode_utf32(values, n, endian)
        with ThreadPoolExecutor(4) as ex:
            outs = list(ex.map(lambda _: codec.decode(enc, spec).tolist(), range(8)))
        assert all(o == values for o in outs)


def test_native_order_is_what_numpy_writes() -> None:
    native = "little" if sys.byteorder == "little" else "big"
    arr = np.array(["xy", "z"], dtype="U2")
    assert bytes(BytesCodec(endian=native).encode(arr, _spec((2,), "U2"))) == arr.tobytes()  # type: ignore[arg-type]
