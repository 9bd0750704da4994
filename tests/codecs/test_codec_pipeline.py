"""CodecPipeline: chains, decode_into fast paths, sizes, partial delegation, threads, interop."""

from __future__ import annotations

import gzip as std_gzip
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import crc32c
import numcodecs
import numpy as np
import pytest
from codec_helpers import CORE_DTYPES, make_spec, same, sample, smooth

from zarrcy.codecs import ArrayBytesCodec, ArraySpec, BytesBytesCodec, GzipCodec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CorruptChunkError

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
T10 = {"name": "transpose", "configuration": {"order": [1, 0]}}

CHAINS = {
    "bytes": [LE],
    "bytes-big": [BE],
    "gzip": [LE, {"name": "gzip", "configuration": {"level": 1}}],
    "gzip-big-crc": [BE, {"name": "gzip", "configuration": {"level": 5}}, "crc32c"],
    "crc-gzip": [LE, "crc32c", {"name": "gzip", "configuration": {"level": 5}}],
    "zstd": [LE, {"name": "zstd", "configuration": {"level": 0}}],
    "blosc": [LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}],
    "T-gzip": [T10, LE, {"name": "gzip", "configuration": {"level": 1}}],
    "T-big-zstd-crc": [T10, BE, {"name": "zstd", "configuration": {"level": 3, "checksum": True}}, "crc32c"],
    "T-T": [T10, T10, LE, "crc32c"],
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_chains_round_trip(name: str) -> None:
    spec = make_spec((24, 17), "float32")
    p = CodecPipeline.from_codecs(CHAINS[name], spec)
    a = smooth((24, 17))
    enc = p.encode(a)
    d = p.decode(enc)
    assert same(np.ascontiguousarray(d), a) and d.flags.writeable and d.dtype == np.float32
    for enc_ in (enc, bytes(enc), bytearray(enc), memoryview(bytes(enc))):
        out = np.zeros((24, 17), "float32")
        p.decode_into(enc_, out)
        assert same(out, a)
    big = np.full((50, 40), -1, "float32")
    view = big[1:49:2, 3:37:2]
    p.decode_into(enc, view)
    assert same(view.copy(), a)
    assert (big[0] == -1).all()


@pytest.mark.parametrize("dtype", CORE_DTYPES, ids=str)
@pytest.mark.parametrize("chain", ["gzip-big-crc", "zstd", "T-big-zstd-crc", "bytes-big"])
def test_every_dtype_through_chains(dtype: np.dtype, chain: str) -> None:
    spec = make_spec((5, 6), dtype)
    codecs = [c if c not in (LE, BE) else ({"name": "bytes"} if dtype.itemsize == 1 or dtype.kind == "V" and dtype.type is np.void else c) for c in CHAINS[chain]]
    p = CodecPipeline.from_codecs(codecs, spec)
    a = sample((5, 6), dtype, 7)
    enc = p.encode(a)
    assert same(np.ascontiguousarray(p.decode(enc)), a)
    out = np.zeros((5, 6), dtype)
    p.decode_into(enc, out)
    assert same(out, a)


def test_decode_into_writes_straight_into_out(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec((64, 64), "float32")
    p = CodecPipeline.from_codecs(CHAINS["gzip-big-crc"], spec)
    a = smooth((64, 64))
    enc = p.encode(a)
    out = np.zeros((64, 64), "float32")
    seen: list[bool] = []
    from zarrcy.codecs import _native

    assert p.native_chain is not None  # gzip + crc32c: one native engine call per chunk
    orig = _native.decode_code

    def spy(chain: Any, data: Any, dst: np.ndarray) -> int:
        seen.append(np.shares_memory(dst, out))
        return orig(chain, data, dst)

    monkeypatch.setattr(_native, "decode_code", spy)
    p.decode_into(enc, out)
    assert seen == [True] and same(out, a)
    # transposed chain into a Fortran-ordered out: out.T is C-contiguous -> still direct
    pt = CodecPipeline.from_codecs([T10, LE, {"name": "gzip", "configuration": {"level": 1}}], spec)
    seen.clear()
    out = np.zeros((64, 64), "float32", order="F")
    pt.decode_into(pt.encode(a), out)
    assert seen == [True] and same(out, a)


def test_encoded_sizes() -> None:
    spec = make_spec((3, 5), "int16")
    assert CodecPipeline.from_codecs([LE], spec).compute_encoded_size() == 30
    assert CodecPipeline.from_codecs([LE, "crc32c"], spec).compute_encoded_size() == 34
    assert CodecPipeline.from_codecs([T10, LE, "crc32c", "crc32c"], spec).compute_encoded_size() == 38
    assert CodecPipeline.from_codecs(CHAINS["gzip"], spec).compute_encoded_size() is None


def test_attributes() -> None:
    spec = make_spec((3, 5), "float32")
    p = CodecPipeline.from_codecs(CHAINS["T-big-zstd-crc"], spec)
    assert [c.name for c in p.array_array] == ["transpose"]
    assert p.array_bytes.name == "bytes"
    assert [c.name for c in p.bytes_bytes] == ["zstd", "crc32c"]
    assert p.spec == spec and len(p.codecs) == 4
    assert CodecPipeline.from_codecs(p, spec).codecs == p.codecs
    assert not p.supports_partial_decode and not p.supports_partial_encode


def test_wrong_chunk_shape_rejected() -> None:
    p = CodecPipeline.from_codecs([LE], make_spec((3,), "float32"))
    with pytest.raises(ValueError):
        p.encode(np.zeros(4, "float32"))
    with pytest.raises(ValueError):
        p.decode_into(b"\0" * 12, np.zeros(4, "float32"))


@pytest.mark.parametrize("name", [n for n in CHAINS if n not in ("bytes", "bytes-big")])
def test_corrupt_values(name: str) -> None:
    spec = make_spec((40, 20), "float32")
    p = CodecPipeline.from_codecs(CHAINS[name], spec)
    enc = bytes(p.encode(smooth((40, 20))))
    rng = np.random.default_rng(1)
    bad = [enc[: len(enc) // 2], enc[:3], b"", rng.integers(0, 256, 300, dtype=np.uint8).tobytes(), enc + bytes(2 << 20)]
    for b in bad:
        with pytest.raises(CorruptChunkError) as e:
            p.decode(b)
        assert type(e.value) is CorruptChunkError
        with pytest.raises(CorruptChunkError) as e:
            p.decode_into(b, np.zeros((40, 20), "float32"))
        assert type(e.value) is CorruptChunkError


class _FakePartial(ArrayBytesCodec):
    name = "fake_partial"
    supports_partial_decode = True
    supports_partial_encode = True

    @classmethod
    def from_dict(cls, configuration: Any, path: str) -> Any:
        return cls()

    def to_dict(self) -> dict:
        return {"name": self.name}

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytes:
        return b""

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        return np.zeros(spec.shape, spec.dtype)

    def decode_partial(self, getter: Any, selection: tuple, spec: ArraySpec, out: Any = None) -> Any:
        return ("decode_partial", getter, selection, spec.shape)

    def encode_partial(self, setter: Any, selection: tuple, value: Any, spec: ArraySpec) -> None:
        setter.append((selection, value))


def test_partial_delegation() -> None:
    spec = make_spec((4, 4), "uint8")
    p = CodecPipeline.from_codecs([_FakePartial()], spec)
    assert p.supports_partial_decode and p.supports_partial_encode
    assert p.decode_partial("g", (slice(0, 2),)) == ("decode_partial", "g", (slice(0, 2),), (4, 4))
    log: list = []
    p.encode_partial(log, (slice(1, 2), 3), 7)  # type: ignore[arg-type]
    assert len(log) == 1 and log[0][0] == (slice(1, 2), 3) and log[0][1].tolist() == [7]
    q = CodecPipeline.from_codecs([_FakePartial(), "crc32c"], spec)
    assert not q.supports_partial_decode
    with pytest.raises(NotImplementedError):
        q.decode_partial("g", ())


@pytest.mark.parametrize("name", ["gzip", "zstd", "blosc", "gzip-big-crc", "T-big-zstd-crc"])
def test_threads_decode_concurrently(name: str) -> None:
    spec = make_spec((128, 128), "float32")
    p = CodecPipeline.from_codecs(CHAINS[name], spec)
    chunks = [smooth((128, 128), seed=i) for i in range(12)]
    encoded = [bytes(p.encode(c)) for c in chunks]
    out = np.zeros((12, 128, 128), "float32")

    def work(i: int) -> bool:
        for _ in range(3):
            p.decode_into(encoded[i], out[i])
            if not same(p.decode(encoded[i]), chunks[i]):
                return False
        return True

    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(12)))
    assert all(same(out[i], chunks[i]) for i in range(12))


def test_threads_encode_concurrently() -> None:
    spec = make_spec((64, 64), "float32")
    p = CodecPipeline.from_codecs(CHAINS["gzip-big-crc"], spec)
    chunks = [smooth((64, 64), seed=i) for i in range(8)]
    with ThreadPoolExecutor(4) as ex:
        encoded = list(ex.map(lambda c: bytes(p.encode(c)), chunks))
    for c, e in zip(chunks, encoded):
        assert same(p.decode(e), c)


# -- interop at codec level ---------------------------------------------------------------
def test_bytes_from_reference_libraries() -> None:
    spec = make_spec((10, 10), "float64")
    a = smooth((10, 10), "float64")
    big = a.astype(">f8").tobytes()
    assert same(CodecPipeline.from_codecs([BE, {"name": "gzip", "configuration": {"level": 1}}], spec).decode(std_gzip.compress(big)), a)
    crc = big + crc32c.crc32c(big).to_bytes(4, "little")
    assert same(CodecPipeline.from_codecs([BE, "crc32c"], spec).decode(crc), a)
    z = numcodecs.Zstd(level=5).encode(a.tobytes())
    assert same(CodecPipeline.from_codecs(CHAINS["zstd"], spec).decode(z), a)
    b = numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE).encode(a.tobytes())
    assert same(CodecPipeline.from_codecs([LE, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 8, "blocksize": 0}}], spec).decode(b), a)


@pytest.mark.parametrize("name", [n for n in CHAINS if n != "T-T"])
def test_zarr_python_reads_ours_and_we_read_theirs(name: str) -> None:
    import zarr

    spec = make_spec((6, 8), "float32")
    p = CodecPipeline.from_codecs(CHAINS[name], spec)
    a = smooth((6, 8))
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [6, 8], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6, 8]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0, "codecs": p.to_json(),
    }
    store = zarr.storage.MemoryStore()
    z = zarr.open_array(store=store, mode="w", **_zarr_kwargs(meta))
    # theirs -> ours
    z[:] = a
    raw = _raw(store, "c/0/0")
    assert same(np.ascontiguousarray(p.decode(raw)), a)
    # ours -> theirs
    b = smooth((6, 8), seed=9)
    _put(store, "c/0/0", bytes(p.encode(b)))
    assert same(zarr.open_array(store=store, mode="r")[:], b)


def _zarr_kwargs(meta: dict) -> dict:
    from zarr.core.metadata.v3 import ArrayV3Metadata

    m = ArrayV3Metadata.from_dict(meta)
    return dict(shape=m.shape, dtype=meta["data_type"], chunks=m.chunk_grid.chunk_shape if hasattr(m.chunk_grid, "chunk_shape") else (6, 8),
                fill_value=0.0, codecs=list(m.codecs), zarr_format=3)


def _raw(store: Any, key: str) -> bytes:
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    buf = asyncio.run(store.get(key, prototype=default_buffer_prototype()))
    return buf.to_bytes()


def _put(store: Any, key: str, data: bytes) -> None:
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    asyncio.run(store.set(key, default_buffer_prototype().buffer.from_bytes(data)))


# -- property: any valid chain round-trips any data ------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_BB = [
    "crc32c",
    {"name": "gzip", "configuration": {"level": 1}},
    {"name": "gzip", "configuration": {"level": 0}},
    {"name": "zstd", "configuration": {"level": 1, "checksum": True}},
    {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1, "shuffle": "bitshuffle", "blocksize": 0}},
]


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(["uint8", "int16", "float32", "complex128", "float64"]),
    endian=st.sampled_from(["little", "big"]),
    transpose=st.booleans(),
    bb=st.lists(st.sampled_from(range(len(_BB))), max_size=3),
    seed=st.integers(0, 2**16),
)
def test_any_chain_round_trips(shape: tuple, dtype: str, endian: str, transpose: bool, bb: list, seed: int) -> None:
    spec = make_spec(shape, dtype)
    codecs: list = []
    if transpose:
        codecs.append({"name": "transpose", "configuration": {"order": list(range(len(shape)))[::-1]}})
    codecs.append({"name": "bytes", "configuration": {"endian": endian}})
    codecs += [_BB[i] for i in bb]
    p = CodecPipeline.from_codecs(codecs, spec)
    a = sample(shape, dtype, seed)
    enc = p.encode(a)
    assert same(np.ascontiguousarray(p.decode(enc)).reshape(shape), a)
    out = np.zeros(shape, dtype)
    p.decode_into(bytes(enc), out)
    assert same(out, a)


def test_native_bytes_decode_is_zero_copy_for_writable_input() -> None:
    spec = make_spec((3, 4), "float32")
    p = CodecPipeline.from_codecs([LE], spec)
    buf = bytearray(np.arange(12, dtype="<f4").tobytes())
    arr = p.decode(buf)
    assert np.shares_memory(arr, np.frombuffer(buf, np.uint8)) and arr.flags.writeable
    ro = p.decode(bytes(buf))
    assert ro.flags.writeable and same(ro, arr)


#: chains whose integrity checks make arbitrary bytes decoding successfully impossible in
#: practice (a 32-bit checksum over the payload, or gzip's CRC-32 and length trailer)
CHECKED = {"gzip", "gzip-big-crc", "crc-gzip", "T-gzip", "T-big-zstd-crc", "T-T"}


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=600), name=st.sampled_from([n for n in CHAINS if n not in ("bytes", "bytes-big")]))
def test_arbitrary_bytes_never_crash(data: bytes, name: str) -> None:
    """Arbitrary bytes raise exactly CorruptChunkError (never a builtin error, never a
    subclass standing in for it); a chain with an integrity check never decodes them; a
    chain without one (zstd without checksum, blosc) decodes them identically through
    ``decode`` and ``decode_into``."""
    spec = make_spec((4, 5), "float32")
    p = CodecPipeline.from_codecs(CHAINS[name], spec)
    try:
        arr = p.decode(data)
    except CorruptChunkError as e:
        assert type(e) is CorruptChunkError and str(e)
        with pytest.raises(CorruptChunkError):
            p.decode_into(data, np.zeros((4, 5), "float32"))
        return
    assert name not in CHECKED, f"{name} decoded arbitrary bytes {data!r}"
    out = np.zeros((4, 5), "float32")
    p.decode_into(data, out)
    assert arr.tobytes() == out.tobytes()
    assert arr.shape == (4, 5)  # only possible for payloads that really decode (e.g. blosc has no checksum)


@pytest.mark.parametrize("codec", [
    {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}},
    {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    {"name": "gzip", "configuration": {"level": 1}},
    {"name": "numcodecs.zlib", "configuration": {"level": 1}},  # no decode_into: decode, then check
])
def test_decode_sized_is_exact(codec: Any) -> None:
    """``BytesBytesCodec.decode_sized`` (one default in the base class, issue 15 item 5):
    exactly ``size`` bytes or CorruptChunkError, never more."""
    from zarrcy.codecs import codec_from_dict

    c = codec_from_dict(codec)
    spec = make_spec((64,), "float32")
    raw = smooth((64,), "float32").tobytes()
    enc = c.encode(raw, spec)
    assert bytes(np.asarray(c.decode_sized(enc, len(raw), spec)).reshape(-1).view(np.uint8)) == raw
    for wrong in (len(raw) - 4, len(raw) + 4):
        with pytest.raises(CorruptChunkError):
            c.decode_sized(enc, wrong, spec)


class _Raising(BytesBytesCodec):
    """A third-party bytes->bytes codec whose decoder raises ``exc``."""

    name = "raising"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @classmethod
    def from_dict(cls, configuration: Any, path: str) -> Any:  # pragma: no cover
        raise NotImplementedError

    def to_dict(self) -> dict:
        return {"name": self.name}

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        return data

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        raise self.exc


@pytest.mark.parametrize("exc", [ValueError("bad"), OSError("bad"), RuntimeError("bad"), EOFError("bad")])
def test_decode_failure_is_corrupt_with_its_cause(exc: BaseException) -> None:
    """Issue 15 item 5: a codec's decoding failure becomes CorruptChunkError and keeps the
    codec's exception as ``__cause__`` (it was dropped with ``from None``)."""
    spec = make_spec((4,), "uint8")
    for chain in ([LE, _Raising(exc)], [LE, _Raising(exc), "crc32c"]):
        p = CodecPipeline.from_codecs(chain, spec)
        enc = p.encode(np.arange(4, dtype="uint8"))
        for decode in (p.decode, lambda b: p.decode_into(b, np.zeros(4, "uint8"))):
            with pytest.raises(CorruptChunkError) as e:
                decode(enc)
            assert e.value.__cause__ is exc


def test_out_of_memory_is_not_a_corrupt_chunk() -> None:
    """MemoryError says nothing about the stored bytes: it propagates as itself."""
    spec = make_spec((4,), "uint8")
    exc = MemoryError("no memory")
    for chain in ([LE, _Raising(exc)], [LE, _Raising(exc), "crc32c"]):
        p = CodecPipeline.from_codecs(chain, spec)
        enc = p.encode(np.arange(4, dtype="uint8"))
        with pytest.raises(MemoryError) as e:
            p.decode(enc)
        assert e.value is exc


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(["uint8", "int16", "float32", "complex64", "float64"]),
    endian=st.sampled_from(["little", "big"]),
    order=st.sampled_from([None, "reverse", "roll"]),
    bb=st.lists(st.sampled_from(range(len(_BB))), max_size=2),
    where=st.sampled_from(["region", "fortran", "contiguous"]),
    seed=st.integers(0, 2**16),
)
def test_native_region_decode_matches_numpy(shape: tuple, dtype: str, endian: str, order: str | None, bb: list,
                                            where: str, seed: int) -> None:
    """A plain chunk decoded into a strided region of a larger array, a Fortran-ordered
    array or a C array, through a transpose or not (the kernel path of
    ``codecs/_region.py`` where the chain has a kernel plan): numpy's transpose / byte
    order of the data written are the oracle."""
    spec = make_spec(shape, dtype)
    codecs: list = []
    ndim = len(shape)
    perm = None
    if order == "reverse":
        perm = list(range(ndim))[::-1]
    elif order == "roll":
        perm = list(range(1, ndim)) + [0]
    if perm is not None:
        codecs.append({"name": "transpose", "configuration": {"order": perm}})
    codecs.append({"name": "bytes", "configuration": {"endian": endian}} if np.dtype(dtype).itemsize > 1 else "bytes")
    codecs += [_BB[i] for i in bb]
    p = CodecPipeline.from_codecs(codecs, spec)
    a = sample(shape, dtype, seed)
    enc = bytes(p.encode(a))
    if where == "region":
        big = np.zeros(tuple(s + 3 for s in shape), dtype)
        out = big[tuple(slice(1, 1 + s) for s in shape)]
    elif where == "fortran":
        out = np.zeros(shape, dtype, order="F")
    else:
        out = np.zeros(shape, dtype)
    p.decode_into(enc, out)
    assert same(out, a)
    if where == "region":  # nothing outside the region was written
        big[tuple(slice(1, 1 + s) for s in shape)] = 0
        assert not big.any()
