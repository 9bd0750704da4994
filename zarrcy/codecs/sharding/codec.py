"""The ``sharding_indexed`` codec object: configuration (JSON), metadata-time checks,
whole-shard encode/decode; partial reads and writes are delegated to
:mod:`.reader` and :mod:`.writer`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, Literal, Sequence, cast

import numpy as np

from zarrcy._kernels import _sharding as K
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec, ByteGetter, ByteSetter, Codec, Selection, fill_key
from zarrcy.codecs.sharding import cached, reader, scatter, writer
from zarrcy.codecs._common import thread_bytes
from zarrcy.codecs.sharding.format import (
    SENTINEL,
    ShardLayout,
    codecs_from_json,
    contiguous,
    flat_bytes,
    lay_out,
    write_order,
)
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError, MetadataError, expected
from zarrcy.execution import ExecContext
from zarrcy.metadata._parse import config_dict

__all__ = ["ShardingCodec", "IndexLocation"]

IndexLocation = Literal["start", "end"]
_KEYS = ("chunk_shape", "codecs", "index_codecs", "index_location")
_DEFAULT_INNER = [{"name": "bytes", "configuration": {"endian": "little"}}]
_DEFAULT_INDEX = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


@dataclass(frozen=True)
class ShardingCodec(ArrayBytesCodec):
    """``sharding_indexed``: many inner chunks in one stored object, plus an index."""

    name: ClassVar[str] = "sharding_indexed"
    supports_partial_decode: ClassVar[bool] = True
    supports_partial_encode: ClassVar[bool] = True
    #: decode / encode spread a shard's inner chunks over the call's threads: the
    #: pipeline passes its execution context (a direct call without one is an entry
    #: point and makes its own)
    uses_context: ClassVar[bool] = True

    chunk_shape: tuple[int, ...]
    codecs: tuple[Codec, ...] = ()
    index_codecs: tuple[Codec, ...] = ()
    index_location: IndexLocation = "end"
    _layouts: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        cs = tuple(self.chunk_shape)
        if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c > 0 for c in cs):
            raise MetadataError(expected("chunk_shape", "an array of positive integers", list(cs)), "chunk_shape")
        object.__setattr__(self, "chunk_shape", tuple(int(c) for c in cs))
        if not self.codecs:
            object.__setattr__(self, "codecs", codecs_from_json(_DEFAULT_INNER, "codecs"))
        else:
            object.__setattr__(self, "codecs", tuple(self.codecs))
        if not self.index_codecs:
            object.__setattr__(self, "index_codecs", codecs_from_json(_DEFAULT_INDEX, "index_codecs"))
        else:
            object.__setattr__(self, "index_codecs", tuple(self.index_codecs))
        if self.index_location not in ("start", "end"):
            raise MetadataError(
                expected("index_location", "one of ('start', 'end')", self.index_location), "index_location"
            )

    # the per-spec layout cache holds pipelines: keep it out of pickles
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_layouts", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_layouts", {})

    @property
    def inner_chunk_shape(self) -> tuple[int, ...]:
        return self.chunk_shape

    # -- JSON --------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str = "codecs[0]") -> "ShardingCodec":
        config = config_dict(configuration, path, _KEYS, required=("chunk_shape", "codecs"))
        cfg = f"{path}.configuration"
        cs = config["chunk_shape"]
        if (
            not isinstance(cs, list)
            or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in cs)
        ):
            raise MetadataError(expected(f"{cfg}.chunk_shape", "an array of positive integers", cs), f"{cfg}.chunk_shape")
        codecs = codecs_from_json(config["codecs"], f"{cfg}.codecs")
        index_codecs = codecs_from_json(config.get("index_codecs", _DEFAULT_INDEX), f"{cfg}.index_codecs")
        loc = config.get("index_location", "end")
        if loc not in ("start", "end") or not isinstance(loc, str):
            raise MetadataError(
                expected(f"{cfg}.index_location", "one of ('start', 'end')", loc), f"{cfg}.index_location"
            )
        return cls(chunk_shape=tuple(cs), codecs=codecs, index_codecs=index_codecs,
                   index_location=cast(IndexLocation, loc))

    def to_dict(self) -> dict[str, Any]:
        from zarrcy.codecs import codecs_to_json

        return {
            "name": self.name,
            "configuration": {
                "chunk_shape": list(self.chunk_shape),
                "codecs": codecs_to_json(list(self.codecs)),
                "index_codecs": codecs_to_json(list(self.index_codecs)),
                "index_location": self.index_location,
            },
        }

    # -- metadata-time checks ------------------------------------------------------------
    def validate(self, spec: ArraySpec, path: str = "codecs[0]") -> None:
        self.layout(spec, path)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return None

    def layout(self, spec: ArraySpec, path: str = "sharding_indexed") -> ShardLayout:
        """The :class:`ShardLayout` of shards of ``spec`` (computed once per spec)."""
        last = self._layouts.get(None)  # the spec object of the last call (a pipeline passes the same one)
        if last is not None and last[0] is spec:
            return last[1]
        lay = self._layout_of(spec, path)
        self._layouts[None] = (spec, lay)  # holds spec: its identity cannot be reused
        return lay

    def _layout_of(self, spec: ArraySpec, path: str) -> ShardLayout:
        key = (tuple(spec.shape), spec.dtype, fill_key(spec))  # not .str: "|V<n>" is shared
        lay = self._layouts.get(key)
        if lay is None:
            lay = ShardLayout(self, spec, path)
            if len(self._layouts) > 256:  # few specs (a rectilinear grid: one per shard shape); bounded
                self._layouts.clear()
            self._layouts[key] = lay
        return lay

    _layout = layout  # older name

    def after_array_codecs(self, leading: Sequence[Codec], spec: ArraySpec) -> tuple[ShardingCodec, ArraySpec] | None:
        """This codec with ``leading`` dropped from the front of its inner chain (they
        are elementwise, so a shard's values can be encoded by them as a whole), and
        the shard's spec in their encoded dtype and fill value."""
        got = self.layout(spec).inner.encoded_stage(leading)
        if got is None:
            return None
        rest, inner = got
        return replace(self, codecs=rest), ArraySpec(spec.shape, inner.dtype, inner.fill_value, inner.data_type)

    # -- whole-shard decode ----------------------------------------------------------------
    def _index_of(self, buf: memoryview, layout: ShardLayout) -> np.ndarray:
        size = buf.nbytes
        isz = layout.index_size
        if size < isz:
            raise CorruptChunkError(f"shard is {size} bytes, shorter than its index ({isz} bytes)")
        raw = buf[:isz] if layout.start else buf[size - isz:]
        flat = layout.decode_index(raw)
        layout.validate(flat, size)
        return flat

    def decodes_into_strided(self, spec: ArraySpec) -> bool:
        # the kernel path of decode_into scatters into the view's strides
        # (scatter.writes_strided; other views get one copy, as before)
        layout = self.layout(spec)
        return layout.n > 1 and scatter.usable(layout)

    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec, ctx: ExecContext | None = None) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        self.decode_into(data, out, spec, ctx)
        return out

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, spec: ArraySpec,
                    ctx: ExecContext | None = None) -> bool:
        if ctx is None:
            ctx = ExecContext.for_call()
        layout = self.layout(spec)
        if tuple(out.shape) != tuple(spec.shape):
            raise ValueError(expected("sharding_indexed.decode_into out.shape", str(tuple(spec.shape)), out.shape))
        buf = flat_bytes(data)
        flat = self._index_of(buf, layout)
        if layout.n > 1 and scatter.usable(layout):
            self._decode_whole_kernel(layout, buf, flat, out, ctx)
            return True
        offs = flat[0::2].tolist()
        nbs = flat[1::2].tolist()
        inner = layout.inner
        fill = layout.fill
        region = layout.region

        def task(i: int) -> None:
            view = out[region(i)]
            off = offs[i]
            if off == SENTINEL:
                view[...] = fill
            else:
                try:
                    inner.decode_into(buf[off:off + nbs[i]], view, ctx=ctx)
                except CorruptChunkError as e:
                    raise CorruptChunkError(f"{layout.chunk_name(i)}: {e}") from e

        ctx.map_inner(layout.n, task, spec.nbytes)
        if reader.decode_stats.enabled:
            reader.decode_stats.add(int((flat[0::2] != SENTINEL).sum()))
        return True

    @staticmethod
    def _decode_whole_kernel(layout: ShardLayout, buf: memoryview, flat: np.ndarray, out: np.ndarray,
                             ctx: ExecContext) -> None:
        """Every inner chunk in one C loop per thread (the whole shard is one buffer)."""
        proj, tables = scatter.whole_tables(layout)
        offs = flat[0::2]
        stored = offs != SENTINEL
        task_src = np.where(stored, 0, -1).astype(np.int64)
        off_task = np.where(stored, offs, 0).astype(np.int64)
        nb_task = np.where(stored, flat[1::2].astype(np.int64), -1)
        inner = layout.inner

        def python_task(k: int, dest: np.ndarray) -> None:  # an ambiguous gzip code: the codec decides
            o = int(off_task[k])
            try:
                inner.decode_into(buf[o:o + int(nb_task[k])], dest[layout.region(k)], ctx=ctx)
            except CorruptChunkError as e:
                raise CorruptChunkError(f"{layout.chunk_name(k)}: {e}") from e

        scatter.decode_tasks(ctx, layout, proj, out, [buf], task_src, off_task, nb_task, python_task, tables)

    # -- whole-shard encode ------------------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ArraySpec, ctx: ExecContext | None = None) -> bytes | bytearray | None:
        if ctx is None:
            ctx = ExecContext.for_call()
        layout = self.layout(spec)
        arr = contiguous(np.asarray(chunk, dtype=spec.dtype))
        if arr.shape != tuple(spec.shape):
            raise ValueError(f"sharding_indexed.encode: expected shape {tuple(spec.shape)}, received {arr.shape}")
        if layout.n > 1 and scatter.usable(layout):
            return self._encode_kernel(layout, arr, ctx)
        if _config_get("write_empty_chunks"):
            todo = list(range(layout.n))
        else:
            empty = layout.empty_flags(arr, layout.chunk_shape)
            todo = np.flatnonzero(empty == 0).tolist()
        if not todo:
            return None
        inner = layout.inner
        region = layout.region
        encoded: list[Any] = [None] * len(todo)

        def task(k: int) -> None:
            encoded[k] = inner.encode(contiguous(arr[region(todo[k])]), ctx=ctx)

        ctx.map_inner(len(todo), task, spec.nbytes)
        nbytes = np.full(layout.n, SENTINEL, np.uint64)
        pieces = []
        for i, e in zip(todo, encoded):
            if e is not None:  # a nested shard may still turn out empty
                e = flat_bytes(e)
                nbytes[i] = len(e)
                pieces.append(e)
        if not pieces:
            return None
        flat = np.empty(2 * layout.n, np.uint64)
        order = write_order(layout)
        lay_out(nbytes, layout.index_size if layout.start else 0, flat, order)
        index = layout.encode_index(flat)
        if order is not None:  # pieces in their physical order (offsets ascend)
            stored_ids = [i for i in todo if nbytes[i] != SENTINEL]
            pieces = [p for _, p in sorted(zip(flat[0::2][stored_ids].tolist(), pieces))]
        # one allocation, one copy per piece
        return b"".join([index, *pieces] if layout.start else [*pieces, index])

    def _encode_kernel(self, layout: ShardLayout, arr: np.ndarray, ctx: ExecContext) -> bytearray | None:
        """Every inner chunk gathered, checked for emptiness and encoded through the
        native engine (transposed, swapped, compressed, checksummed as the layout's
        kernel plan says) in one C loop per part (``_inner_encode.gather_encode``; the
        context decides the parts: :func:`.scatter.encode_chunks`) into slots of one
        buffer, then packed behind (or after) the index."""
        n = layout.n
        # this thread's buffer, until the shard below is packed
        slots, slot_off, nbytes = scatter.encode_chunks(ctx, layout, arr, n,
                                                        lambda size: thread_bytes("shard-encode", size))
        stored = nbytes >= 0
        if not stored.any():
            return None
        nb = np.where(stored, nbytes, 0).astype(np.uint64)
        nb[~stored] = SENTINEL
        start = layout.start
        isz = layout.index_size
        flat = np.empty(2 * n, np.uint64)
        end = lay_out(nb, isz if start else 0, flat, write_order(layout))
        total = end + (0 if start else isz)
        result = bytearray(total)  # bytes-like for every caller, no copy at the end
        out = np.frombuffer(result, np.uint8)
        sel = np.flatnonzero(stored)
        K.copy_ranges(slots, slot_off[:-1][sel].astype(np.uint64), nb[sel], out, flat[0::2][sel])
        mv = memoryview(result)
        if start:
            layout.encode_index_into(flat, mv[:isz])
        else:
            layout.encode_index_into(flat, mv[total - isz:])
        return result

    def empty_encoding(self, spec: ArraySpec) -> bytes:
        """A shard without stored inner chunks (stores without deletes write it instead
        of erasing an all-fill shard)."""
        return bytes(writer.empty_shard(self.layout(spec)))

    # -- partial I/O -------------------------------------------------------------------------
    def decode_partial(
        self, getter: ByteGetter, selection: Selection, spec: ArraySpec, out: np.ndarray | None = None,
        ctx: ExecContext | None = None,
    ) -> np.ndarray | None:
        """Decode ``selection`` (ints, slices with steps, int64 arrays; see
        ``zarrcy.codecs._base.Selection``) of the shard behind ``getter``: the index
        (cached, checked against the shard version) and only the inner chunks the
        selection touches, in coalesced range reads.  None if the shard is missing."""
        return cached.decode_partial(self.layout(spec), getter, tuple(selection), out, ctx or ExecContext.for_call())

    def read_cached_box(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], box: Sequence[tuple[int, int]],
                        spec: ArraySpec, out: np.ndarray) -> bool:
        return cached.read_box(self.layout(spec), getter_of, box, out)

    def read_cached_points(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], coords: np.ndarray,
                           spec: ArraySpec, out: np.ndarray) -> bool:
        return cached.read_points(self.layout(spec), getter_of, coords, out)

    def decode_points(self, getter: ByteGetter, coords: np.ndarray, spec: ArraySpec,
                      ctx: ExecContext | None = None) -> np.ndarray | None:
        return cached.decode_points(self.layout(spec), getter, coords, ctx or ExecContext.for_call())

    def read_point(self, getter: ByteGetter, local: Sequence[int], spec: ArraySpec, ctx: ExecContext | None = None) -> Any:
        return cached.read_point(self.layout(spec), getter, local, ctx or ExecContext.for_call())

    def encode_partial(
        self, setter: ByteSetter, selection: Selection, value: Any, spec: ArraySpec, ctx: ExecContext | None = None,
        *, write_strategy: writer.WriteStrategy | None = None,
    ) -> None:
        """Write ``value`` into ``selection`` of the stored shard (strategy
        ``zarrcy.config(shard_write_strategy=...)`` unless given: see
        :mod:`zarrcy.codecs.sharding.writer`)."""
        writer.encode_partial(self.layout(spec), setter, tuple(selection), value, write_strategy,
                              ctx or ExecContext.for_call())

    def encode_points(self, setter: ByteSetter, coords: np.ndarray, values: Any, spec: ArraySpec,
                      ctx: ExecContext | None = None) -> None:
        """vindex writes: only the inner chunks holding the points change."""
        writer.encode_points(self.layout(spec), setter, coords, values, None, ctx or ExecContext.for_call())
