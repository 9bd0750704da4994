"""The destination codecs a conversion chooses when neither ``--codecs`` nor
``--compressor`` is given: the source's compressor where Zarr v3 has it (blosc, zstd,
gzip; v2 zlib as gzip), its ``fixedscaleoffset`` filter as ``scale_offset`` +
``cast_value``, and for HDF5 / NetCDF-4 sources an equivalent of their filters
(deflate + shuffle -> blosc with byte shuffle, deflate -> gzip at the same level,
fletcher32 -> crc32c), so the output keeps the source's compression ratio.  Every
substitution comes with a note saying what changed and why."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarrcy.array import Array
from zarrcy.errors import MetadataError, ZarrcyError
from zarrcy.v2.metadata import V2ArrayMetadata

__all__ = ["default_codecs", "default_compressors", "hdf5_compressors", "v2_metadata"]

#: the internal codec of HDF5 sources (zarrcy/codecs/hdf5.py; never written)
HDF5_CODEC = "zarrcy.hdf5_chunk"
#: blosc's zstd level for HDF5 deflate sources (see :func:`hdf5_compressors`)
BLOSC_CLEVEL = 3
#: an HDF5 deflate source's replacement may store a sample chunk in this many times its size
KEEP_RATIO = 1.1


def v2_metadata(src: Array) -> V2ArrayMetadata | None:
    """The source's v2/v1 metadata, or None for a v3 array (``Array.metadata`` is typed
    as the v3 document; a v2 array carries a V2ArrayMetadata)."""
    m: object = src.metadata
    return m if isinstance(m, V2ArrayMetadata) else None


_ZSTD0 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
_BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
# v2 filters the default chain leaves out without a note (the v3 data type / serializer
# already does their work)
_V2_SILENT_FILTERS = frozenset(("vlen-utf8", "vlen-bytes"))


def _v2_compressor_to_v3(comp: dict[str, Any], itemsize: int) -> tuple[dict[str, Any] | None, str | None]:
    """A numcodecs compressor config -> (its v3 codec, or None; a note when it is not the same)."""
    cid = comp.get("id")
    if cid == "blosc":
        shuffle = int(comp.get("shuffle", 1))
        if shuffle == -1:  # numcodecs AUTOSHUFFLE: bit shuffle for 1-byte items, else byte shuffle
            shuffle = 2 if itemsize == 1 else 1
        cfg = {"cname": comp.get("cname", "lz4"), "clevel": int(comp.get("clevel", 5)),
               "shuffle": _BLOSC_SHUFFLES.get(shuffle, "shuffle"), "blocksize": int(comp.get("blocksize", 0) or 0)}
        return {"name": "blosc", "configuration": cfg}, None
    if cid == "zstd":
        return {"name": "zstd", "configuration": {"level": int(comp.get("level", 0)),
                                                  "checksum": bool(comp.get("checksum", False))}}, None
    if cid == "gzip":
        return {"name": "gzip", "configuration": {"level": int(comp.get("level", 5))}}, None
    if cid == "zlib":
        level = int(comp.get("level", 1))
        return ({"name": "gzip", "configuration": {"level": level}},
                f"compressor zlib level {level} has no Zarr v3 codec: gzip level {level} (the same deflate) is used")
    return None, None


def default_codecs(src: Array) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The destination's default (array->array filters, bytes->bytes compressors, notes)
    when neither ``--codecs`` nor ``--compressor`` is given: the source's compressor (blosc,
    zstd, gzip; zlib as gzip) and the filters that have a v3 equivalent
    (``fixedscaleoffset`` -> ``scale_offset`` + ``cast_value``); anything else is dropped or
    replaced by zstd level 0, and a note says so."""
    m = src.metadata
    notes: list[str] = []
    filters: list[dict[str, Any]] = []
    v2 = v2_metadata(src)
    if v2 is not None:
        from zarrcy.codecs.scale_offset import expand_fixedscaleoffset

        for f in v2.filters or []:
            fid = f.get("id")
            if fid in _V2_SILENT_FILTERS:
                continue
            if fid == "fixedscaleoffset":
                try:
                    cfg = {k: v for k, v in f.items() if k != "id"}
                    filters.extend(c.to_dict() for c in expand_fixedscaleoffset(cfg, "filters"))
                    continue
                except (MetadataError, ValueError):
                    pass
            notes.append(f"filter {fid} dropped: Zarr v3 has no equivalent codec, the values are stored unfiltered")
        comp = v2.compressor
        if comp is None:
            notes.append("the source has no compressor: zstd level 0 is used (--compressor none keeps it uncompressed)")
            return filters, [dict(_ZSTD0)], notes
        v3, note = _v2_compressor_to_v3(comp, src.dtype.itemsize)
        if v3 is None:
            notes.append(f"compressor {comp.get('id')} has no Zarr v3 codec: zstd level 0 is used instead "
                         "(choose one with --compressor)")
            return filters, [dict(_ZSTD0)], notes
        if note:
            notes.append(note)
        return filters, [v3], notes
    chain = list(m.to_json().get("codecs") or [])
    # a sharded source: its inner chain holds the compressor
    while len(chain) == 1 and chain[0].get("name") == "sharding_indexed":
        chain = list((chain[0].get("configuration") or {}).get("codecs") or [])
    h5 = next((c for c in chain if c.get("name") == HDF5_CODEC), None)
    if h5 is not None:  # (a --cf-packing chain ahead of it is the planner's)
        h5_out, h5_notes = hdf5_compressors(h5.get("configuration") or {}, *_sample(src))
        return filters, h5_out, h5_notes
    out: list[dict[str, Any]] = []
    kinds = {c.name: c.kind for c in m.codecs}
    for c in chain:
        name = c.get("name")
        if name in ("blosc", "zstd", "gzip", "crc32c"):
            cfg = dict(c.get("configuration") or {})
            cfg.pop("typesize", None)  # re-derived from the destination data type
            out.append({"name": name, "configuration": cfg} if cfg or name != "crc32c" else {"name": name})
        elif name in ("bytes", "vlen-utf8", "vlen-bytes", "transpose", "sharding_indexed"):
            continue
        elif kinds.get(name) != "array->bytes":
            notes.append(f"codec {name} of the source not kept (give the chain with --codecs to keep it)")
    if not any(c["name"] != "crc32c" for c in out):
        notes.append("the source has no blosc/zstd/gzip compressor: zstd level 0 is used "
                     "(--compressor none keeps it uncompressed)")
        out.insert(0, dict(_ZSTD0))
    return filters, out, notes


def _blosc(shuffle: str) -> dict[str, Any]:
    return {"name": "blosc", "configuration": {"cname": "zstd", "clevel": BLOSC_CLEVEL, "shuffle": shuffle,
                                               "blocksize": 0}}


def _encoded_size(sample: np.ndarray, compressor: dict[str, Any]) -> int:
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline
    from zarrcy.metadata.data_type import from_numpy

    dt3 = from_numpy(sample.dtype)
    spec = ArraySpec(tuple(sample.shape), sample.dtype, sample.dtype.type(0), dt3)
    pipe = CodecPipeline.from_codecs([{"name": "bytes", "configuration": {"endian": "little"}}, compressor], spec)
    out = pipe.encode(np.ascontiguousarray(sample))
    return 0 if out is None else len(out)


def hdf5_compressors(cfg: dict[str, Any], sample: np.ndarray | None = None,
                     sample_stored: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Zarr v3 compressors that keep an HDF5 dataset's compression (``cfg``: the internal
    ``zarrcy.hdf5_chunk`` codec's configuration, its HDF5 filter pipeline) and a note
    saying what changed and why.  HDF5's deflate is a zlib stream, so it is re-encoded
    either way: by the first of blosc zstd with byte shuffle, blosc zstd without shuffle
    and gzip at the source's level (fastest first: measured, blosc + shuffle encodes 4-6x
    faster than the other two) whose size on ``sample`` (one decoded source chunk) is at
    most ``KEEP_RATIO`` x ``sample_stored`` (that chunk's size in the file), else the
    smallest of them -- shuffle helps smooth fields and hurts noisy ones, so the source's
    own choice is no guide.  Without a sample, deflate + shuffle becomes blosc with byte
    shuffle and deflate alone gzip at the same level.  fletcher32 becomes crc32c (each
    stored chunk stays checksummed)."""
    filters = cfg.get("filters") or []
    ids = [int(f.get("id", -1)) for f in filters]
    deflate = next((f for f in filters if int(f.get("id", -1)) == 1), None)
    level = int((deflate.get("values") or [4])[0]) if deflate is not None else None
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    if level is not None:
        gz_level = max(0, min(9, level))
        gz: dict[str, Any] = {"name": "gzip", "configuration": {"level": gz_level}}
        cands = [_blosc("shuffle"), _blosc("noshuffle"), gz]
        best = 0 if 2 in ids else 2
        if sample is not None and sample.size:
            sizes: list[int] = []
            for c in cands:
                sizes.append(_encoded_size(sample, c))
                if sample_stored and sizes[-1] <= KEEP_RATIO * sample_stored:
                    break
            best = len(sizes) - 1 if sample_stored and sizes[-1] <= KEEP_RATIO * sample_stored else \
                min(range(len(sizes)), key=lambda i: sizes[i])
        out.append(cands[best])
        what = ("blosc zstd level 3 with byte shuffle", "blosc zstd level 3 without shuffle",
                f"gzip level {gz_level}")[best]
        notes.append(f"HDF5 deflate level {level}{' + shuffle' if 2 in ids else ''} is re-encoded as {what} (Zarr v3 "
                     "has no HDF5 filters; of blosc zstd with byte shuffle, without, and gzip at the same level, the "
                     "fastest that keeps a sample chunk within 10 % of its size in the file)")
    elif 2 in ids:
        out.append(_blosc("shuffle"))
        notes.append("HDF5 shuffle without compression: blosc zstd with byte shuffle is used")
    else:
        out.append(dict(_ZSTD0))
        notes.append("the HDF5 source is stored uncompressed: zstd level 0 is used (--compressor none keeps it "
                     "uncompressed)")
    if 3 in ids:
        out.append({"name": "crc32c"})
        notes.append("HDF5 fletcher32 checksums become crc32c (each stored chunk stays checksummed)")
    return out, notes


def _sample(src: Array) -> tuple[np.ndarray | None, int | None]:
    """The first stored chunk of ``src`` (decoded) and its stored size, for
    :func:`hdf5_compressors`; ``(None, None)`` for empty arrays, types without a fixed
    size and a first chunk that is not stored."""
    from zarrcy.convert.regions import object_key

    if 0 in src.shape or src.dtype.kind not in "biufc":
        return None, None
    stored = src.store.getsize(object_key(src, (0,) * src.ndim))
    if stored is None:
        return None, None
    sel = tuple(slice(0, min(c, n)) for c, n in zip(src.chunks, src.shape))
    try:
        sample = np.asarray(src[sel])
    except ZarrcyError:  # a damaged chunk: the regions report it (exit 1, or --on-error skip)
        return None, None
    return sample, max(1, int(stored) - 4)  # (the HDF5 view prefixes a 4-byte filter mask)


def default_compressors(src: Array) -> list[dict[str, Any]]:
    """The compressors of :func:`default_codecs` (the ``--format 2`` default uses them)."""
    return [c for c in default_codecs(src)[1] if c["name"] != "crc32c"]
