"""Fused scale_offset+cast_value vs the two codecs in turn: same bytes, same error (type and
element index) -- shared by the fused, dispatch and fast-path tests."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.scale_offset import ScaleOffsetCastCodec
from zarrcy.errors import CastError


def outcome(fn: Callable[..., Any], *a: Any) -> tuple[Any, Any]:
    """``(result, None)``, or ``(None, (error type, element index))`` for a CastError."""
    try:
        return fn(*a), None
    except CastError as e:
        return None, (type(e), e.index)


def _fused(so: Any, cv: Any) -> ScaleOffsetCastCodec:
    fused = so.fuse_with(cv)
    assert isinstance(fused, ScaleOffsetCastCodec)
    return fused


def check_encode(x: np.ndarray, so: Any, cv: Any, decode: bool = True) -> None:
    """Encode (and, with ``decode``, decode the result back) both ways and compare."""
    spec = ArraySpec(x.shape, x.dtype, x.dtype.type(0))
    fused = _fused(so, cv)
    seq, seq_err = outcome(lambda a: cv.encode(so.encode(a, spec), spec), x)
    fus, fus_err = outcome(fused.encode, x, spec)
    assert seq_err == fus_err
    if seq is None:
        return
    assert seq.dtype == fus.dtype and seq.tobytes() == fus.tobytes()
    if decode:
        check_decode(seq, so, cv, x.dtype)


def check_decode(enc: np.ndarray, so: Any, cv: Any, dtype: Any) -> None:
    spec = ArraySpec(enc.shape, np.dtype(dtype), np.dtype(dtype).type(0))
    fused = _fused(so, cv)
    seq, seq_err = outcome(lambda a: so.decode(cv.decode(a, spec), spec), enc)
    fus, fus_err = outcome(fused.decode, enc, spec)
    assert seq_err == fus_err
    if seq is not None:
        assert seq.dtype == fus.dtype and seq.tobytes() == fus.tobytes()
