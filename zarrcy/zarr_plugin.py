"""zarr-python codec pipeline backed by zarrcy's codecs.

```python
import zarr, zarrcy.zarr_plugin   # importing registers the class (so does the entry point)
zarr.config.set({"codec_pipeline.path": "zarrcy.zarr_plugin.ZarrcyCodecPipeline"})
```

zarr-python keeps its stores, indexing and sharding partial reads; whole chunks (and
the inner chunks of a shard, since the sharding codec builds its inner pipeline from
the configured class) are decoded and encoded by zarrcy's pipeline on worker threads
with the GIL released in the kernels.  A chain zarrcy cannot run (an unknown codec,
an unsupported data type) falls back to zarr-python's own ``BatchedCodecPipeline``
for that array, so enabling the plugin never makes an array unreadable.

Uses zarr-python's codec-pipeline interface (``zarr.abc.codec.CodecPipeline``) via its
default implementation, overriding only ``decode_batch``/``encode_batch``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterable

import numpy as np
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.registry import register_pipeline

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import ZarrcyError
from zarrcy.metadata.data_type import parse_data_type

__all__ = ["ZarrcyCodecPipeline"]


def _zarrcy_pipeline(codecs_json: str, spec: Any) -> CodecPipeline | None:
    """zarrcy's resolved pipeline for zarr-python codecs (as JSON) and chunk spec, or None."""
    try:
        dtype_json = spec.dtype.to_json(zarr_format=3)
        data_type = parse_data_type(dtype_json)
        np_dtype = np.dtype(spec.dtype.to_native_dtype()).newbyteorder("=")
        fill = np.asarray(spec.fill_value, dtype=np_dtype)[()]
        zspec = ArraySpec(tuple(spec.shape), np_dtype, fill, data_type)
        return CodecPipeline.from_codecs(json.loads(codecs_json), zspec)
    except (ZarrcyError, TypeError, ValueError, AttributeError, KeyError):
        return None


class ZarrcyCodecPipeline(BatchedCodecPipeline):
    """``BatchedCodecPipeline`` whose chunk decode/encode runs through zarrcy."""

    def _json(self) -> str | None:
        cached = self.__dict__.get("_zarrcy_json", False)
        if cached is False:
            try:
                cached = json.dumps([c.to_dict() for c in self])
            except (TypeError, ValueError, AttributeError):
                cached = None
            object.__setattr__(self, "_zarrcy_json", cached)
        return cached

    def _pipelines(self, specs: list[Any]) -> list[CodecPipeline] | None:
        cj = self._json()
        if cj is None:
            return None
        # one resolved zarrcy pipeline per distinct chunk spec (zarr-python hands us one
        # spec per chunk; building a pipeline per chunk would cost more than decoding it)
        cache: dict[Any, CodecPipeline | None] | None = self.__dict__.get("_zarrcy_cache")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_zarrcy_cache", cache)
        out = []
        for spec in specs:
            try:
                key: Any = (tuple(spec.shape), repr(spec.dtype), repr(spec.fill_value))
            except Exception:  # noqa: BLE001  (an exotic spec: no caching)
                key = None
            p = cache.get(key, False) if key is not None else False
            if p is False:
                p = _zarrcy_pipeline(cj, spec)
                if key is not None:
                    if len(cache) > 64:
                        cache.clear()
                    cache[key] = p
            if p is None:
                return None
            out.append(p)
        return out

    async def decode_batch(self, chunk_bytes_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        items = list(chunk_bytes_and_specs)
        pipes = self._pipelines([s for _, s in items])
        if pipes is None:
            return await super().decode_batch(items)

        def run() -> list[Any]:
            out = []
            for (buf, spec), pipe in zip(items, pipes):
                if buf is None:
                    out.append(None)
                    continue
                arr = pipe.decode(buf.as_numpy_array())
                out.append(spec.prototype.nd_buffer.from_numpy_array(arr))
            return out

        return await asyncio.to_thread(run)

    async def encode_batch(self, chunk_arrays_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        items = list(chunk_arrays_and_specs)
        pipes = self._pipelines([s for _, s in items])
        if pipes is None:
            return await super().encode_batch(items)

        def run() -> list[Any]:
            out = []
            for (nd, spec), pipe in zip(items, pipes):
                if nd is None:
                    out.append(None)
                    continue
                data = pipe.encode(np.ascontiguousarray(nd.as_numpy_array()))
                out.append(None if data is None else spec.prototype.buffer.from_bytes(bytes(data)))
            return out

        return await asyncio.to_thread(run)


register_pipeline(ZarrcyCodecPipeline)
