"""``zarrcy convert --quantize`` casts each region once: the cast kernel gives the region's
report and its encoded values together (``zarrcy.casting.quantize_with_report``), and
the encoded values are written through the destination minus the quantize codecs
(``Array.encoded_by``).  The oracle is the unfused path -- the values written through
the destination's whole codec chain, as zarrcy did before -- which must store the same
bytes, object for object; the refusals are the existing tests'."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrcy
import zarrcy.convert.engine as engine
import zarrcy.convert.execute as execute
from zarrcy.codecs.scale_offset import ScaleOffsetCastCodec
from zarrcy.convert import convert_main
from zarrcy.convert.model import ConvertError

from convert_helpers import stored_objects

ROUNDING = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
OUT_OF_RANGE = ("clamp", "wrap", None)


def _unfused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's path without the fusion: every region written through the whole chain."""
    monkeypatch.setattr(engine, "encoded_recorder", lambda rec, quantize: None)


def _source(root: str, dtype: str, fill: float | None, seed: int, specials: bool = True,
            inf: bool = False) -> np.ndarray:
    """A float source (37 x 29, chunks 8 x 8): values inside the chain's range, NaN,
    -0.0, the fill value, an all-fill chunk and an all-NaN chunk; values above and
    below the range with ``specials``, +-Inf with ``inf``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 60.0, (37, 29)).astype(dtype)
    x[rng.random(x.shape) < 0.05] = np.nan
    x[rng.random(x.shape) < 0.03] = -0.0
    x[16:24, 8:16] = np.nan
    if fill is not None:
        x[rng.random(x.shape) < 0.05] = fill
        x[0:8, 0:8] = fill
        x[32:, 24:] = fill  # an edge chunk all fill
    if specials:
        x[rng.random(x.shape) < 0.02] = 1e3
        x[rng.random(x.shape) < 0.02] = -1e3
    if inf:
        x[1, 2], x[30, 3] = np.inf, -np.inf
    attrs = {} if fill is None else {"_FillValue": fill}
    a = zarrcy.create_array(root, shape=x.shape, chunks=(8, 8), dtype=dtype, attributes=attrs,
                            fill_value=np.nan if fill is None else fill)
    a[...] = x
    return x


def _both(monkeypatch: pytest.MonkeyPatch, tmp_path, src: str, args: list[str], name: str,
          agreed: list[bool] | None = None) -> tuple[int, dict, dict]:
    """Exit codes must agree; the stored objects of both runs (fused, unfused).
    ``agreed``: per region of the fused run, whether its encoded values were written
    (False: the fill values disagreed, the values went through the whole chain)."""
    fused, plain = str(tmp_path / f"{name}-fused.zarr"), str(tmp_path / f"{name}-plain.zarr")
    common = ["--progress", "off", "--region-mb", "0.001", *args]
    real = execute._fills_agree

    def record(*a):
        ok = real(*a)
        if agreed is not None:
            agreed.append(ok)
        return ok

    with monkeypatch.context() as m:
        m.setattr(execute, "_fills_agree", record)
        rc = convert_main([src, fused, *common])
    with monkeypatch.context() as m:
        _unfused(m)
        assert convert_main([src, plain, *common]) == rc
    if rc:
        return rc, {}, {}
    return rc, stored_objects(fused), stored_objects(plain)


@pytest.mark.parametrize("layout", [[], ["--shards", "16,16", "--chunks", "8,8"]], ids=["chunks", "shards"])
@pytest.mark.parametrize("rounding", ROUNDING)
@pytest.mark.parametrize("oor", OUT_OF_RANGE)
def test_fused_stores_the_same_bytes(monkeypatch, tmp_path, layout, rounding, oor):
    dtype = "f8" if ROUNDING.index(rounding) % 2 else "f4"
    src = str(tmp_path / "src.zarr")
    _source(src, dtype, -9999.0, seed=ROUNDING.index(rounding), specials=oor is not None)
    # (fill=1: no value clamps onto the fill code, which would send regions to the unfused path)
    q = f"scale=4,offset=-2,dtype=uint8,rounding={rounding},nan=255,fill=1"
    q += f",out_of_range={oor},collisions=allow" if oor else ""
    agreed: list[bool] = []
    rc, fused, plain = _both(monkeypatch, tmp_path, src, ["--quantize", q, *layout], "q", agreed)
    assert rc == 0 and fused.keys() == plain.keys() and len(fused) > 3
    assert fused == plain
    assert len(agreed) > 3 and all(agreed)


@pytest.mark.parametrize("layout", [[], ["--shards", "16,24", "--chunks", "8,8"]], ids=["chunks", "shards"])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_fused_without_fill_sentinel_and_uint16(monkeypatch, tmp_path, layout, dtype):
    """A NaN fill value (the nan= code is the fill code), uint16, the data's own
    fill-value code reached by ordinary values rounding onto it (fall back: same bytes)."""
    src = str(tmp_path / "src.zarr")
    _source(src, dtype, None, seed=11, specials=False)
    for i, q in enumerate(("scale=1000,offset=-1,dtype=uint16,nan=65535",
                           "scale=0.5,offset=-1,dtype=uint16,rounding=towards-zero,nan=0,collisions=allow")):
        agreed: list[bool] = []
        rc, fused, plain = _both(monkeypatch, tmp_path, src, ["--quantize", q, *layout], f"q{i}", agreed)
        assert rc == 0 and fused == plain and len(fused) > 3
        # values in [-1, 1) round onto code 0, the NaN fill value's: those regions fall back
        assert all(agreed) if i == 0 else (not all(agreed) and len(agreed) > 3)


def test_fused_refusals_agree(monkeypatch, tmp_path):
    """Values that cannot be encoded, and collisions with a sentinel: exit 5 both ways,
    nothing left behind."""
    src = str(tmp_path / "src.zarr")
    _source(src, "f8", -9999.0, seed=3, specials=False, inf=True)
    for i, q in enumerate(("scale=4,offset=-2,dtype=uint8,nan=255,fill=0",  # +-Inf: no code
                           "scale=4,offset=-2,dtype=uint8,nan=255,fill=0,out_of_range=clamp")):
        rc, _, _ = _both(monkeypatch, tmp_path, src, ["--quantize", q], f"r{i}")
        assert rc == 5
    src = str(tmp_path / "src2.zarr")
    _source(src, "f8", -9999.0, seed=3, specials=True)
    for i, q in enumerate(("scale=4,offset=-2,dtype=uint8,nan=255,fill=0",  # out of range
                           "scale=4,offset=-2,dtype=uint8,nan=255,fill=0,out_of_range=clamp")):  # clamped onto fill=0
        rc, _, _ = _both(monkeypatch, tmp_path, src, ["--quantize", q], f"s{i}")
        assert rc == 5


class _Counter:
    def __init__(self) -> None:
        self.n = 0


def test_each_region_is_cast_once(monkeypatch, tmp_path):
    """The kernel runs once per region (the report and the encoded values), and the
    codec's encode cast never runs; the unfused path casts twice (report, then codec)."""
    import zarrcy.casting.engine as cengine

    src = str(tmp_path / "src.zarr")
    _source(src, "f8", -9999.0, seed=5, specials=False)
    kernel, codec = _Counter(), _Counter()
    real_kernel, real_encode = cengine._k.cast_report_into, ScaleOffsetCastCodec.encode

    def count_kernel(*a):
        kernel.n += 1
        return real_kernel(*a)

    def count_encode(self, chunk, spec):
        codec.n += 1
        return real_encode(self, chunk, spec)

    class K:  # the kernel module, its one entry point counted
        def __getattr__(self, name):
            return count_kernel if name == "cast_report_into" else getattr(cengine_k, name)

    cengine_k = cengine._k
    monkeypatch.setattr(cengine, "_k", K())
    monkeypatch.setattr(ScaleOffsetCastCodec, "encode", count_encode)
    q = ["--quantize", "scale=4,offset=-2,dtype=uint8,nan=255,fill=0", "--progress", "off", "--region-mb", "0.001",
         "--json"]
    for shards in ([], ["--shards", "16,16", "--chunks", "8,8"]):
        kernel.n = codec.n = 0
        out = str(tmp_path / f"fused{len(shards)}.zarr")
        assert convert_main([src, out, *q, *shards]) == 0
        regions = len({k for k in stored_objects(out) if k.startswith("c/")})
        assert regions > 3 and codec.n == 0 and 0 < kernel.n <= regions + 2, (kernel.n, codec.n, regions)
        with monkeypatch.context() as m:
            _unfused(m)
            assert convert_main([src, str(tmp_path / f"plain{len(shards)}.zarr"), *q, *shards]) == 0
        assert codec.n > 0  # the old path: every stored (inner) chunk cast again by the codec


def test_encoded_by_view(tmp_path):
    """``Array.encoded_by``: the leading elementwise codecs only (sharded or not), the
    fill value as they encode it, and a pickle that stays a view."""
    chain = [{"name": "scale_offset", "configuration": {"offset": 10.0, "scale": 4.0}},
             {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp"}}]
    for shards in (None, (16, 16)):
        a = zarrcy.create_array(str(tmp_path / f"a{shards is None}"), shape=(30, 30), chunks=(8, 8), shards=shards,
                                dtype="f8", fill_value=12.5, filters=chain)
        v = a.encoded_by(chain)
        assert v is not None and v.dtype == np.uint8 and v.fill_value == 10  # (12.5 - 10) * 4
        assert v.store is a.store and v.path == a.path and not v.filters
        assert a.encoded_by(chain[:1]) is not None and a.encoded_by(chain[1:]) is None
        assert a.encoded_by([{**chain[0], "configuration": {"offset": 10.0, "scale": 2.0}}]) is None
        back = pickle.loads(pickle.dumps(v))
        assert back.dtype == np.uint8 and back.metadata.to_json() == v.metadata.to_json()
        x = np.arange(900, dtype="f8").reshape(30, 30) % 50
        v[...] = np.clip(np.rint((x - 10) * 4), 0, 255).astype(np.uint8)
        b = zarrcy.create_array(str(tmp_path / f"b{shards is None}"), shape=(30, 30), chunks=(8, 8), shards=shards,
                                dtype="f8", fill_value=12.5, filters=chain)
        b[...] = x
        assert stored_objects(str(tmp_path / f"a{shards is None}")) == stored_objects(str(tmp_path / f"b{shards is None}"))
    plain = zarrcy.create_array(str(tmp_path / "p"), shape=(4,), chunks=(2,), dtype="f8")
    assert plain.encoded_by(chain) is None


def test_fused_verify(monkeypatch, tmp_path):
    """--verify compares what reads back (through the whole chain) with the expected values."""
    src = str(tmp_path / "src.zarr")
    _source(src, "f4", -9999.0, seed=9, specials=False)
    out = str(tmp_path / "v.zarr")
    rep = zarrcy.convert(src, out, quantize="scale=4,offset=-2,dtype=uint8,nan=255,fill=0", verify=True,
                         progress="off", region_bytes=1024)
    assert rep.arrays == 1
    with pytest.raises(ConvertError):  # a wrong write would be caught: break the fused writer
        monkeypatch.setattr(engine, "encoded_recorder", lambda rec, quantize: _Broken(rec.encoded_by(quantize)))
        zarrcy.convert(src, str(tmp_path / "w.zarr"), quantize="scale=4,offset=-2,dtype=uint8,nan=255,fill=0",
                       verify=True, progress="off", region_bytes=1024)


class _Broken:
    """A fused writer that stores every code one too high (what --verify must catch)."""

    def __init__(self, view) -> None:
        self.view, self.store, self.fill_value = view, view.store, view.fill_value

    def set_basic_selection(self, sel, values, context=None) -> None:
        self.view.set_basic_selection(sel, values + np.uint8(1), context=context)
