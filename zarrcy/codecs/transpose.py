"""The ``transpose`` codec (spec: ../shared/specs/v3-codec-transpose.rst).

``array -> array``: the encoded array ``B`` has ``B_shape[i] = A_shape[order[i]]``.
Configuration:

* ``order``: a permutation of ``0 .. n-1``.  The constants ``"C"`` and ``"F"`` of
  the 2019 draft (draft-2019-codec-transpose.txt) are read as the identity and the
  reversal and written back as explicit permutations.

Encoding and decoding return views (numpy ``transpose``); the one physical copy
happens where the bytes are produced or consumed (the ``bytes`` codec), and
:meth:`encoded_view` lets the pipeline decode straight into the caller's array.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, Selection
from zarrcy.codecs._common import MISSING, config_dict
from zarrcy.errors import MetadataError, expected

__all__ = ["TransposeCodec"]


@dataclass(frozen=True)
class TransposeCodec(ArrayArrayCodec):
    """``order`` is a tuple of ints, or ``"C"``/``"F"`` until the chunk rank is known."""

    order: tuple[int, ...] | str

    name: ClassVar[str] = "transpose"
    aliases: ClassVar[tuple[str, ...]] = ("https://purl.org/zarr/spec/codec/transpose",)

    def __post_init__(self) -> None:
        if not isinstance(self.order, str):
            object.__setattr__(self, "order", tuple(int(i) for i in self.order))

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("order",))
        p = f"{path}.configuration.order"
        if "order" not in cfg:
            raise MetadataError(expected(p, "a permutation of 0..n-1", MISSING), p)
        order = cfg["order"]
        if order in ("C", "F"):
            return cls(order=order)
        if not isinstance(order, (list, tuple)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in order
        ):
            raise MetadataError(expected(p, "a permutation of 0..n-1 (list of integers)", order), p)
        if sorted(order) != list(range(len(order))):
            raise MetadataError(expected(p, "a permutation of 0..n-1", order), p)
        return cls(order=tuple(int(i) for i in order))

    def to_dict(self) -> dict[str, Any]:
        order = self.order
        if isinstance(order, str):  # rank unknown (never resolved): keep the legacy form
            return {"name": self.name, "configuration": {"order": order}}
        return {"name": self.name, "configuration": {"order": list(order)}}

    def evolve(self, spec: ArraySpec) -> TransposeCodec:
        """Turn ``"C"``/``"F"`` into the explicit permutation for ``spec``'s rank."""
        n = len(spec.shape)
        if self.order == "C":
            return replace(self, order=tuple(range(n)))
        if self.order == "F":
            return replace(self, order=tuple(range(n - 1, -1, -1)))
        return self

    def permutation(self, spec: ArraySpec | None = None) -> tuple[int, ...]:
        """``order`` as a permutation (for ``spec``'s rank when it is still ``"C"``/``"F"``;
        codecs in a resolved pipeline are evolved already)."""
        order = self.evolve(spec).order if spec is not None else self.order
        if isinstance(order, str):
            raise ValueError(f"transpose: order {order!r} needs the chunk rank (evolve the codec first)")
        return order

    def validate(self, spec: ArraySpec, path: str) -> None:
        p = f"{path}.configuration.order"
        order = self.permutation(spec)
        n = len(spec.shape)
        if len(order) != n or sorted(order) != list(range(n)):
            raise MetadataError(expected(p, f"a permutation of 0..{n - 1} (chunk rank {n})", list(order)), p)

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        order = self.permutation(spec)
        return replace(spec, shape=tuple(spec.shape[i] for i in order))

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size

    @property
    def inverse(self) -> tuple[int, ...]:
        order = self.permutation()
        inv = [0] * len(order)
        for i, o in enumerate(order):
            inv[o] = i
        return tuple(inv)

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk.transpose(self.permutation())

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk.transpose(self.inverse)

    supports_encoded_view: ClassVar[bool] = True

    def native_order(self, spec: ArraySpec) -> tuple[int, ...] | None:
        return self.permutation(spec)

    def encoded_view(self, out: np.ndarray) -> np.ndarray:
        """A view of the decoded-shape array ``out`` in the encoded representation."""
        return out.transpose(self.permutation())

    # partial reads and writes pass through: a transpose only renames axes
    def encode_selection(self, selection: Selection, spec: ArraySpec) -> Selection:
        return tuple(selection[o] for o in self.permutation(spec))

    def encoded_piece(self, piece: np.ndarray, selection: Selection, encoded: Selection,
                      spec: ArraySpec, view: bool) -> np.ndarray:
        kept = [d for d, s in enumerate(selection) if not isinstance(s, (int, np.integer))]
        rank = {d: k for k, d in enumerate(kept)}
        return piece.transpose([rank[o] for o in self.permutation() if o in rank])
