"""The inner-chunk kernels with the native codec engine's chains (issue 21): zstd, blosc
and crc32c inner chunks, stored as is or transposed, decoded and scattered
(``decode_scatter_all`` / ``decode_points_all``) and gathered and encoded
(``gather_encode``), against slow references: numpy's transpose / byte order / fancy
indexing for the cells, numcodecs (the same libraries' own bindings) and the ``crc32c``
package for the bytes."""

from __future__ import annotations

import itertools
import os
import struct
import sys

import crc32c as ref_crc32c
import numcodecs.blosc
import numcodecs.zstd
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _compress as C
from zarrcy._kernels import _inner_chunks as K
from zarrcy.codecs import _native

sys.path.insert(0, os.path.dirname(__file__))
from test_inner_chunks import NATIVE, OTHER, csr_tables, fill_for, geometry  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _loaded() -> None:
    for codec in (C.GZIP, C.ZSTD, C.BLOSC):
        assert _native.available(codec, True)


CHAINS = {
    "zstd": (C.ZSTD, False, 1, False, "", 0, 0, 0),
    "zstd-checksum": (C.ZSTD, False, 3, True, "", 0, 0, 0),
    "zstd+crc32c": (C.ZSTD, True, 1, False, "", 0, 0, 0),
    "blosc-lz4": (C.BLOSC, False, 5, False, "lz4", 1, 4, 0),
    "blosc-zstd-bit": (C.BLOSC, True, 5, False, "zstd", 2, 2, 64),
    "blosc-blosclz": (C.BLOSC, False, 9, False, "blosclz", 0, 1, 32),
    "gzip+crc32c": (C.GZIP, True, 1, False, "", 0, 0, 0),
    "raw+crc32c": (C.RAW, True, 0, False, "", 0, 0, 0),
}


def ref_encode(chunk: np.ndarray, chain: tuple, stored: str, order) -> bytes:
    """The stored bytes of a native chunk, by the references (the oracle side)."""
    a = np.asarray(chunk)
    if order is not None:
        a = a.transpose(order)
    raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder(stored)).tobytes()
    codec, crc, level, checksum, cname, shuffle, typesize, blocksize = chain
    if codec == C.ZSTD:
        body = bytes(numcodecs.zstd.compress(raw, level, checksum))
    elif codec == C.BLOSC:
        body = bytes(numcodecs.blosc.compress(raw, cname.encode(), level, shuffle, blocksize, typesize))
    elif codec == C.GZIP:
        import gzip

        body = gzip.compress(raw, level)
    else:
        body = raw
    return body + (struct.pack("<I", ref_crc32c.crc32c(body)) if crc else b"")


def ref_decode(data: bytes, chain: tuple, chunk_shape, dt: np.dtype, stored: str, order) -> np.ndarray:
    codec, crc = chain[0], chain[1]
    if crc:
        assert struct.unpack("<I", data[-4:])[0] == ref_crc32c.crc32c(data[:-4])
        data = data[:-4]
    if codec == C.ZSTD:
        data = bytes(numcodecs.zstd.decompress(data))
    elif codec == C.BLOSC:
        data = bytes(numcodecs.blosc.decompress(data))
    elif codec == C.GZIP:
        import gzip

        data = gzip.decompress(data)
    enc_shape = tuple(chunk_shape[o] for o in order) if order is not None else tuple(chunk_shape)
    a = np.frombuffer(data, dtype=dt.newbyteorder(stored)).reshape(enc_shape).astype(dt)
    return np.ascontiguousarray(a.transpose(np.argsort(order))) if order is not None else a


@st.composite
def cases(draw):
    chunk_shape, grid, shape, indices, dt, stored = geometry(draw, 3, 6, ["u1", "u2", "u4", "u8", "f4", "c8"])
    chain = CHAINS[draw(st.sampled_from(sorted(CHAINS)))]
    order = draw(st.none() | st.permutations(list(range(len(chunk_shape)))).map(tuple))
    seed = draw(st.integers(0, 2**32 - 1))
    missing_p = draw(st.sampled_from([0.0, 0.3]))
    return chunk_shape, grid, shape, indices, dt, stored, chain, order, seed, missing_p


def _swap(dt: np.dtype, stored: str) -> int:
    if stored == NATIVE or dt.itemsize == 1:
        return 0
    return dt.itemsize // 2 if dt.kind == "c" else 1


def _chunks(rng, chunk_shape, grid, dt, missing_p):
    return {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in itertools.product(*map(range, grid)) if rng.random() >= missing_p
    }


@settings(max_examples=150, deadline=None)
@given(cases(), st.integers(1, 3))
@example(((4, 6), (2, 2), (8, 12), [np.arange(1, 7), np.array([11, 2, 2])], np.dtype(NATIVE + "u2"), OTHER,
          CHAINS["zstd"], (1, 0), 5, 0.0), 2)
@example(((64,), (2,), (128,), [np.array([70])], np.dtype(NATIVE + "f4"), NATIVE, CHAINS["blosc-lz4"], None, 1, 0.0), 1)
def test_decode_scatter_all_native_chains(case, threads):
    chunk_shape, grid, shape, indices, dt, stored, chain, order, seed, missing_p = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    chunks = _chunks(rng, chunk_shape, grid, dt, missing_p)
    buf = bytearray()
    where = {}
    for c, chunk in chunks.items():
        buf += b"\xee" * int(rng.integers(0, 3))
        enc = ref_encode(chunk, chain, stored, order)
        where[c] = (len(buf), len(enc))
        buf += enc
    tasks = list(itertools.product(*map(range, grid)))
    src = np.array([0 if c in where else -1 for c in tasks], np.int64)
    off = np.array([where.get(c, (0, -1))[0] for c in tasks], np.int64)
    ln = np.array([where.get(c, (0, -1))[1] for c in tasks], np.int64)
    tables = csr_tables(indices, chunk_shape, grid)
    out = np.empty(tuple(len(i) for i in indices), dt)
    status = np.empty(len(tasks), np.uint8)
    n = K.decode_scatter_all([bytes(buf)], src, np.array(tasks, np.int64).reshape(len(tasks), len(chunk_shape)),
                             off, ln, *tables, np.asarray(chunk_shape, np.int64), dt.itemsize, _swap(dt, stored),
                             chain, fill, out, status, threads, order)
    assert n == 0, [K.describe(int(s)) for s in status]
    full = np.empty(shape, dt)
    fv = np.frombuffer(fill, dt)[0]
    for coords in tasks:
        full[tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, chunk_shape))] = chunks.get(coords, fv)
    np.testing.assert_array_equal(out.view(np.uint8), full[np.ix_(*indices)].view(np.uint8))


@settings(max_examples=80, deadline=None)
@given(cases())
def test_decode_points_all_native_chains(case):
    chunk_shape, grid, shape, indices, dt, stored, chain, order, seed, missing_p = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    chunks = _chunks(rng, chunk_shape, grid, dt, missing_p)
    tasks = list(itertools.product(*map(range, grid)))
    bufs = [ref_encode(chunks[c], chain, stored, order) if c in chunks else b"" for c in tasks]
    src = np.array([k if c in chunks else -1 for k, c in enumerate(tasks)], np.int64)
    ln = np.array([len(b) if c in chunks else -1 for b, c in zip(bufs, tasks)], np.int64)
    off = np.zeros(len(tasks), np.int64)
    pts = [tuple(int(rng.integers(0, s)) for s in shape) for _ in range(int(rng.integers(0, 12)))]
    enc_shape = tuple(chunk_shape[o] for o in order) if order is not None else chunk_shape
    start, local, outi = [0], [], []
    for c in tasks:
        for p, q in enumerate(pts):
            if tuple(x // s for x, s in zip(q, chunk_shape)) == c:
                rel = tuple(x % s for x, s in zip(q, chunk_shape))
                stored_rel = tuple(rel[o] for o in order) if order is not None else rel
                local.append(int(np.ravel_multi_index(stored_rel, enc_shape)))
                outi.append(p)
        start.append(len(local))
    out = np.empty(len(pts), dt)
    status = np.empty(len(tasks), np.uint8)
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
    assert K.decode_points_all(bufs, src, off, ln, i64(start), i64(local), i64(outi), np.asarray(chunk_shape, np.int64),
                               dt.itemsize, _swap(dt, stored), chain, fill, out, status, 2) == 0
    fv = np.frombuffer(fill, dt)[0]
    want = [chunks[tuple(x // s for x, s in zip(q, chunk_shape))][tuple(x % s for x, s in zip(q, chunk_shape))]
            if tuple(x // s for x, s in zip(q, chunk_shape)) in chunks else fv for q in pts]
    np.testing.assert_array_equal(out.view(np.uint8), np.array(want, dt).view(np.uint8))


@settings(max_examples=80, deadline=None)
@given(cases(), st.booleans())
def test_gather_encode_native_chains(case, write_empty):
    chunk_shape, grid, shape, indices, dt, stored, chain, order, seed, missing_p = case
    rng = np.random.default_rng(seed)
    # an array that is not a multiple of the chunks (edge chunks padded with fill)
    shape = tuple(max(1, s - int(rng.integers(0, c))) for s, c in zip(shape, chunk_shape))
    fill = fill_for(dt, rng)
    arr = rng.integers(0, 256, int(np.prod(shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(shape)
    arr[tuple(slice(0, c) for c in chunk_shape)] = np.frombuffer(fill, dt)[0]  # one all-fill chunk
    n = int(np.prod(grid))
    slot = K.slot_size(chain, 0, int(np.prod(chunk_shape)) * dt.itemsize)
    out_buf = np.zeros(n * slot, np.uint8)
    offs = np.arange(n + 1, dtype=np.int64) * slot
    nbytes = np.empty(n, np.int64)
    empty = np.empty(n, np.uint8)
    scratch = np.empty(int(np.prod(chunk_shape)) * dt.itemsize, np.uint8)
    assert K.gather_encode(arr, np.asarray(chunk_shape, np.int64), dt.itemsize, _swap(dt, stored), chain, 0, fill,
                           write_empty, 0, n, out_buf, offs, nbytes, empty, scratch, order) == (-1, 0)
    fv = np.frombuffer(fill, dt)[0]
    for i, coords in enumerate(itertools.product(*map(range, grid))):
        region = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, chunk_shape))
        want = np.full(chunk_shape, fv, dt)
        piece = arr[region]
        want[tuple(slice(0, p) for p in piece.shape)] = piece
        if empty[i]:
            assert not write_empty and (want.view(np.uint8) == np.full(chunk_shape, fv, dt).view(np.uint8)).all()
            continue
        got = ref_decode(out_buf[offs[i]:offs[i] + nbytes[i]].tobytes(), chain, chunk_shape, dt, stored, order)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_corrupt_inner_chunks_get_codes():
    """Damaged, truncated or padded inner chunks: a result code for every chain with an
    integrity check (crc32c, zstd's checksum, gzip's CRC-32), never a crash for the others."""
    chunk_shape = (8, 8)
    dt = np.dtype(NATIVE + "u4")
    data = np.arange(64, dtype=dt).reshape(chunk_shape)
    tables = csr_tables([np.arange(8), np.arange(8)], chunk_shape, (1, 1))
    for name, chain in CHAINS.items():
        checked = chain[1] or chain[3] or chain[0] == C.GZIP
        good = ref_encode(data, chain, NATIVE, None)
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x55
        for payload in (bytes(bad), good[: len(good) // 2], good + b"\x01\x02\x03\x04\x05"):
            out = np.zeros(chunk_shape, dt)
            status = np.empty(1, np.uint8)
            K.decode_scatter_all([payload], np.zeros(1, np.int64), np.zeros((1, 2), np.int64), np.zeros(1, np.int64),
                                 np.array([len(payload)], np.int64), *tables, np.asarray(chunk_shape, np.int64), 4, 0,
                                 chain, bytes(4), out, status, 1)
            if checked:
                assert status[0] != 0, name
