"""transpose codec (v3-codec-transpose.rst, draft-2019-codec-transpose.txt)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from codec_helpers import make_spec, same, sample

from zarrcy.codecs import TransposeCodec, parse_codecs
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import MetadataError

LE = {"name": "bytes", "configuration": {"endian": "little"}}


def _reference_transpose(a: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """B[B_pos] = A[A_pos] with B_pos[i] = A_pos[order[i]], element by element."""
    b = np.empty(tuple(a.shape[o] for o in order), dtype=a.dtype)
    for a_pos in itertools.product(*(range(s) for s in a.shape)):
        b[tuple(a_pos[o] for o in order)] = a[a_pos]
    return b


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 5, 2), (3, 0, 2)])
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_every_permutation(shape: tuple[int, ...], order: tuple[int, ...]) -> None:
    spec = make_spec(shape, "int32")
    a = sample(shape, "int32", 1)
    p = CodecPipeline.from_codecs([{"name": "transpose", "configuration": {"order": list(order)}}, LE], spec)
    enc = p.encode(a)
    assert bytes(enc) == _reference_transpose(a, order).tobytes()
    assert same(p.decode(enc), a)
    out = np.zeros(shape, "int32")
    p.decode_into(enc, out)
    assert same(out, a)
    t = p.array_array[0]
    assert t.resolve(spec).shape == tuple(shape[o] for o in order)


def test_encode_and_decode_are_views() -> None:
    spec = make_spec((3, 4), "float64")
    a = np.zeros((3, 4))
    t = TransposeCodec((1, 0))
    assert np.shares_memory(t.encode(a, spec), a)
    assert np.shares_memory(t.decode(a.T, spec), a)


@pytest.mark.parametrize("legacy, expected", [("C", [0, 1, 2]), ("F", [2, 1, 0])])
def test_legacy_c_f(legacy: str, expected: list[int]) -> None:
    spec = make_spec((2, 3, 4), "uint8")
    codecs = parse_codecs([{"name": "transpose", "configuration": {"order": legacy}}, "bytes"], spec)
    assert codecs[0].to_dict() == {"name": "transpose", "configuration": {"order": expected}}
    a = sample((2, 3, 4), "uint8")
    p = CodecPipeline.from_codecs(codecs, spec)
    assert bytes(p.encode(a)) == np.asarray(a, order=legacy).tobytes(order="A")


def test_old_uri_alias() -> None:
    spec = make_spec((2, 3), "uint8")
    codecs = parse_codecs([{"name": "https://purl.org/zarr/spec/codec/transpose", "configuration": {"order": [1, 0]}}, "bytes"], spec)
    assert codecs[0].to_dict()["name"] == "transpose"


@pytest.mark.parametrize(
    "config",
    [{"order": [0, 0, 1]}, {"order": [0, 1]}, {"order": [1, 2, 3]}, {"order": "X"}, {"order": [0, 1, True]},
     {"order": [0.0, 1, 2]}, {}, {"order": [0, 1, 2], "extra": 1}],
)
def test_bad_configuration(config: dict) -> None:
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration"):
        parse_codecs([{"name": "transpose", "configuration": config}, "bytes"], make_spec((2, 3, 4), "uint8"))


def test_round_trip_dict() -> None:
    t = TransposeCodec((2, 0, 1))
    assert TransposeCodec.from_dict(t.to_dict()["configuration"], "c") == t
