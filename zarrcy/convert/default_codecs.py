"""The destination codecs a conversion chooses when neither ``--codecs`` nor
``--compressor`` is given: the source's compressor where Zarr v3 has it (blosc, zstd,
gzip; v2 zlib as gzip), its ``fixedscaleoffset`` filter as ``scale_offset`` +
``cast_value``, and for HDF5 / NetCDF-4 sources an equivalent of their filters
(deflate + shuffle -> blosc with byte shuffle, deflate -> gzip at the same level,
fletcher32 -> crc32c), so the output keeps the source's compression ratio.  Every
substitution comes with a note saying what changed and why."""

from __future__ import annotations

from typing import Any

from zarrcy.array import Array
from zarrcy.errors import MetadataError
from zarrcy.v2.metadata import V2ArrayMetadata

__all__ = ["default_codecs", "default_compressors", "hdf5_compressors", "v2_metadata"]

#: the internal codec of HDF5 sources (zarrcy/codecs/hdf5.py; never written)
HDF5_CODEC = "zarrcy.hdf5_chunk"
#: blosc's zstd level for HDF5 deflate + shuffle sources (see :func:`hdf5_compressors`)
BLOSC_CLEVEL = 3


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
        h5_out, h5_notes = hdf5_compressors(h5.get("configuration") or {})
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


def hdf5_compressors(cfg: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Zarr v3 compressors that keep an HDF5 dataset's compression (``cfg``: the internal
    ``zarrcy.hdf5_chunk`` codec's configuration, its HDF5 filter pipeline) and a note
    saying what changed and why.  HDF5's deflate is a zlib stream, so it is re-encoded
    either way: deflate + shuffle becomes blosc (zstd inside, byte shuffle: the same
    byte planes, a ratio at least as good -- measured in tests/convert/test_convert_cf.py
    -- and faster to decode); deflate alone becomes gzip at the same level (the same
    deflate stream); fletcher32 becomes crc32c (a checksum still guards every chunk)."""
    filters = cfg.get("filters") or []
    ids = [int(f.get("id", -1)) for f in filters]
    deflate = next((f for f in filters if int(f.get("id", -1)) == 1), None)
    level = int((deflate.get("values") or [4])[0]) if deflate is not None else None
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    if level is not None and 2 in ids:
        out.append({"name": "blosc", "configuration": {"cname": "zstd", "clevel": BLOSC_CLEVEL, "shuffle": "shuffle",
                                                       "blocksize": 0}})
        notes.append(f"HDF5 deflate level {level} + shuffle has no Zarr v3 codec: blosc zstd level {BLOSC_CLEVEL} "
                     "with byte shuffle is used (the same shuffle; a compression ratio at least the source's)")
    elif level is not None:
        out.append({"name": "gzip", "configuration": {"level": max(0, min(9, level))}})
        notes.append(f"HDF5 deflate level {level} is stored as gzip level {max(0, min(9, level))} (the same deflate "
                     "compression in the gzip format Zarr v3 has)")
    elif 2 in ids:
        out.append({"name": "blosc", "configuration": {"cname": "zstd", "clevel": BLOSC_CLEVEL, "shuffle": "shuffle",
                                                       "blocksize": 0}})
        notes.append("HDF5 shuffle without compression: blosc zstd with byte shuffle is used")
    else:
        out.append(dict(_ZSTD0))
        notes.append("the HDF5 source is stored uncompressed: zstd level 0 is used (--compressor none keeps it "
                     "uncompressed)")
    if 3 in ids:
        out.append({"name": "crc32c"})
        notes.append("HDF5 fletcher32 checksums become crc32c (each stored chunk stays checksummed)")
    return out, notes


def default_compressors(src: Array) -> list[dict[str, Any]]:
    """The compressors of :func:`default_codecs` (the ``--format 2`` default uses them)."""
    return [c for c in default_codecs(src)[1] if c["name"] != "crc32c"]
