"""Casting validator: what a ``scale_offset`` / ``cast_value`` chain does to given data.

Public functions (re-exported as ``zarrcy.cast_value`` etc.):

* :func:`cast_value` -- one direction of the cast_value codec (spec:
  ../shared/specs/ext-codec-cast_value.md); decoding a codec is the same call with the
  types swapped and the ``decode`` pairs.
* :func:`scale_offset_encode` / :func:`scale_offset_decode` (ext-codec-scale_offset.md).
* :func:`check_cast` -- a one-pass report over an array (:mod:`zarrcy.casting.report`):
  the outcome counts, the counts by cause (NaN, +-Infinity, above / below the range,
  rounded, clamped, wrapped, mapped, sentinel collisions, ...) with the smallest / largest
  source value and first index of each, the representable range of the chain
  (:mod:`zarrcy.casting.range`), the largest round-trip errors and where, masks and indices.
* :func:`cast_check_main` -- the ``zarrcy cast-check`` command line (:mod:`zarrcy.casting.cli`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zarrcy.casting.engine import chain_report, check_cast, quantize_with_report
from zarrcy.casting.range import representable_range
from zarrcy.casting.report import CAUSES, Cause, CastReport, merge_reports, parse_codecs
from zarrcy.codecs.cast_value import OutOfRange, Rounding, prepare_cast
from zarrcy.codecs.scale_offset import scale_offset_decode_array, scale_offset_encode_array

__all__ = ["cast_value", "scale_offset_encode", "scale_offset_decode", "check_cast", "chain_report", "quantize_with_report",
           "merge_reports", "representable_range", "parse_codecs", "CastReport", "Cause", "CAUSES", "cast_check_main"]


def cast_value(values: Any, data_type: Any, rounding: Rounding = "nearest-even", out_of_range: OutOfRange | None = None,
               scalar_map: Any = None) -> np.ndarray:
    """Cast ``values`` (any supported dtype) to ``data_type`` with the cast_value procedure.

    ``scalar_map``: ``[[input, output], ...]`` in fill-value JSON encoding or plain numbers
    (``"NaN"``, ``"Infinity"``, ``"0x7fc00000"``, ``255``...).  Raises
    :class:`~zarrcy.errors.CastError` (NaN/Inf into a type without them) or
    :class:`~zarrcy.errors.OutOfRangeError` naming the first failing element, and
    :class:`~zarrcy.errors.MetadataError` for a bad mode or scalar_map entry.
    """
    values = np.asarray(values)
    return prepare_cast(values.dtype, data_type, rounding, out_of_range, scalar_map).run(values)


def scale_offset_encode(values: Any, offset: Any = None, scale: Any = None) -> np.ndarray:
    """``(values - offset) * scale`` in the values' own type; non-representable results raise."""
    return scale_offset_encode_array(np.asarray(values), offset, scale)


def scale_offset_decode(values: Any, offset: Any = None, scale: Any = None) -> np.ndarray:
    """``values / scale + offset`` in the values' own type; non-representable results raise."""
    return scale_offset_decode_array(np.asarray(values), offset, scale)


def cast_check_main(argv: Sequence[str] | None = None, load: Any = None) -> int:
    """``zarrcy cast-check`` (see :mod:`zarrcy.casting.cli`)."""
    from zarrcy.casting.cli import cast_check_main as main

    return main(argv, load)
