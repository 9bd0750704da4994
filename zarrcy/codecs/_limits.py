"""How many bytes a bytes->bytes decoder may produce for a chunk whose decoded size is
not known in advance (the ``vlen-utf8``/``vlen-bytes`` chunks of the ``string`` and
``bytes`` data types, Zarr v2 object chunks).

Fixed-size chunks decode with their exact size (``decode_sized``).  A variable-length
chunk of ``n`` elements is the vlen layout (``zarrcy.codecs.vlen``): a 4-byte count, then
a 4-byte length and the bytes of each element.  Its decoded stream is capped *before*
decoding starts (streaming decoders stop there) at::

    min(max_chunk_bytes, 4 + 4 * n + max(n * max_vlen_element_bytes, VLEN_MIN_BUDGET))

``max_vlen_element_bytes`` (``zarrcy.config``, default 64 KiB) is a mean budget per
element: one element may be far longer when others are short.  ``VLEN_MIN_BUDGET``
(16 MiB) lets small chunks hold a few long values.  So a 1,000-element string chunk
decodes to at most ~64 MiB, not to ``max_chunk_bytes`` (8 GiB): a 98 KB zstd bomb is
refused after 64 MiB of output, not 1.6 GB.  Stores holding longer values raise the
option (or ``max_chunk_bytes``) with ``zarrcy.config(max_vlen_element_bytes=...)``.
"""

from __future__ import annotations

import math

from zarrcy.config import get as _config_get
from zarrcy.codecs._base import ArraySpec

__all__ = ["decode_cap", "VLEN_MIN_BUDGET", "CAP_HINT"]

#: a variable-length chunk may always decode to this many bytes of values (bounded by max_chunk_bytes)
VLEN_MIN_BUDGET = 16 << 20

#: appended to "too many decoded bytes" errors: how to raise the cap
CAP_HINT = "raise zarrcy.config(max_vlen_element_bytes=..., max_chunk_bytes=...) for longer values"


def decode_cap(spec: ArraySpec | None) -> int:
    """The most bytes a decoder may produce for a chunk of ``spec`` whose decoded size is
    unknown: ``max_chunk_bytes``, and for variable-length chunks (numpy string or object
    dtype) the vlen budget above."""
    limit = int(_config_get("max_chunk_bytes"))
    if spec is None or spec.dtype.kind not in "TO":
        return limit
    n = math.prod(spec.shape)
    budget = max(n * int(_config_get("max_vlen_element_bytes")), VLEN_MIN_BUDGET)
    return min(limit, 4 + 4 * n + budget)
