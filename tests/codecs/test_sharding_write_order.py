"""subchunk_write_order: inner chunks laid out in Morton order (zarr-python 3.4's default)
or C order; shard bytes equal zarr-python's for the same data and settings, and every
layout reads back the same (the index is always in C order)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs.sharding.format import morton_order
from zarrcy.errors import MetadataError

zarr = pytest.importorskip("zarr")


def _ref_morton(cps):
    """Slow reference: sort coordinates by their interleaved bits (axis 0 first, lowest
    bit first, axes with fewer bits skipped once exhausted)."""
    bits = [(c - 1).bit_length() for c in cps]

    def code(coords):
        z, out = 0, 0
        for b in range(max(bits, default=0)):
            for d, nb in enumerate(bits):
                if b < nb:
                    z |= ((coords[d] >> b) & 1) << out
                    out += 1
        return z

    cs = list(itertools.product(*(range(c) for c in cps)))
    return [int(np.ravel_multi_index(c, cps)) for c in sorted(cs, key=code)]


@pytest.mark.parametrize("cps", [(1,), (5,), (2, 2), (3, 5), (4, 4, 4), (1, 7, 2), (3, 3, 3), (8, 1, 3)])
def test_morton_order_matches_reference(cps):
    assert morton_order(cps).tolist() == _ref_morton(cps)


def _write_both(tmp_path: Path, shape, chunks, shards, order, values, sel=(...,), index_location="end"):
    zarrcy.config(subchunk_write_order=order)
    a = zarrcy.create_array(str(tmp_path / "zc"), shape=shape, dtype=values.dtype, chunks=chunks, shards=shards,
                            compressors=None, fill_value=0)
    a[sel] = values[sel]
    from zarr.codecs import BytesCodec, ShardingCodec

    z = zarr.create_array(str(tmp_path / "zp"), shape=shape, dtype=values.dtype, chunks=shards,
                          serializer=ShardingCodec(chunk_shape=chunks, codecs=[BytesCodec()],
                                                   index_location=index_location, subchunk_write_order=order),
                          compressors=None, fill_value=0)
    z[sel] = values[sel]
    return tmp_path / "zc", tmp_path / "zp"


@pytest.mark.parametrize("order", ["morton", "lexicographic"])
@pytest.mark.parametrize("shape, chunks, shards", [((16, 24), (4, 4), (8, 12)), ((12, 8, 8), (2, 4, 2), (6, 8, 8))])
def test_shard_bytes_equal_zarr_python(tmp_path, order, shape, chunks, shards):
    old = zarrcy.config()
    try:
        values = (np.arange(int(np.prod(shape)), dtype="<u2").reshape(shape) % 251 + 1).astype("<u2")
        zc, zp = _write_both(tmp_path, shape, chunks, shards, order, values)
        ours = {f.relative_to(zc).as_posix(): f.read_bytes() for f in zc.rglob("*") if f.is_file() and f.name != "zarr.json"}
        theirs = {f.relative_to(zp).as_posix(): f.read_bytes() for f in zp.rglob("*") if f.is_file() and f.name != "zarr.json"}
        assert sorted(ours) == sorted(theirs)
        for k in theirs:
            assert ours[k] == theirs[k], (order, k)
        np.testing.assert_array_equal(zarr.open_array(str(zc))[...], values)
        np.testing.assert_array_equal(zarrcy.open_array(str(zp))[...], values)
    finally:
        zarrcy.config(subchunk_write_order=old["subchunk_write_order"])


@pytest.mark.parametrize("order", ["morton", "lexicographic"])
def test_partial_rewrite_keeps_the_order_and_the_data(tmp_path, order):
    old = zarrcy.config()
    try:
        zarrcy.config(subchunk_write_order=order)
        a = zarrcy.create_array(str(tmp_path / "a"), shape=(16, 16), dtype="i4", chunks=(4, 4), shards=(16, 16),
                                fill_value=0)
        want = np.arange(256, dtype="i4").reshape(16, 16) + 1
        a[...] = want
        a[5:7, 9:15] = -1
        want[5:7, 9:15] = -1
        np.testing.assert_array_equal(a[...], want)
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"))[...], want)
        # the physical order of the stored inner chunks follows the configured order
        raw = (tmp_path / "a" / "c" / "0" / "0").read_bytes()
        index = np.frombuffer(raw[-(16 * 16 + 4):-4], "<u8").reshape(16, 2)
        physical = np.argsort(index[:, 0], kind="stable").tolist()
        expect = morton_order((4, 4)).tolist() if order == "morton" else list(range(16))
        assert physical == expect
    finally:
        zarrcy.config(subchunk_write_order=old["subchunk_write_order"])


def test_unknown_write_order_is_refused():
    old = zarrcy.config()
    try:
        zarrcy.config(subchunk_write_order="hilbert")
        a = zarrcy.create_array(zarrcy.storage.MemoryStore(), shape=(8,), dtype="u1", chunks=(2,), shards=(8,))
        with pytest.raises(MetadataError, match="subchunk_write_order"):
            a[...] = 1
    finally:
        zarrcy.config(subchunk_write_order=old["subchunk_write_order"])
