"""Byte ranges for partial reads (v3-core.rst "Abstract store interface").

A request is one of:

* ``None`` -- the whole value;
* ``RangeRequest(offset, length)`` -- ``length`` bytes from ``offset`` (``length=None``: to the end);
* ``SuffixRequest(length)`` -- the last ``length`` bytes.

Stores resolve a request against the value's size with :func:`resolve`; a range that
runs past the end is clipped (as the spec's ``range_length: none`` case implies), and a
suffix longer than the value returns the whole value.
"""

from __future__ import annotations

from typing import NamedTuple, Union

__all__ = ["RangeRequest", "SuffixRequest", "ByteRequest", "resolve", "pieces"]


class RangeRequest(NamedTuple):
    offset: int
    length: int | None = None


class SuffixRequest(NamedTuple):
    length: int


ByteRequest = Union[RangeRequest, SuffixRequest, None]


def resolve(request: ByteRequest, size: int) -> tuple[int, int]:
    """Return ``(start, stop)`` of ``request`` within a value of ``size`` bytes."""
    if request is None:
        return 0, size
    if isinstance(request, SuffixRequest):
        if request.length < 0:
            raise ValueError(f"suffix length: expected >= 0, received {request.length}")
        return max(0, size - request.length), size
    offset, length = request
    if offset < 0 or (length is not None and length < 0):
        raise ValueError(f"byte range: expected non-negative offset/length, received {request}")
    start = min(offset, size)
    stop = size if length is None else min(size, offset + length)
    return start, stop


def pieces(start: int, stop: int, piece: int) -> list[tuple[int, int]]:
    """``[start, stop)`` as consecutive ``(offset, length)`` spans of at most ``piece``
    bytes (a large range read in bounded pieces: ``RangeRequest(*span)`` each)."""
    return [(a, min(piece, stop - a)) for a in range(start, stop, piece)]
