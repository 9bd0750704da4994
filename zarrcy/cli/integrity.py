"""Which codec chains detect bit rot (``zarrcy check --data``).

Decoding a chunk proves only that its bytes *decode*; whether damaged bytes are noticed
depends on the chain.  A chain detects a changed stored chunk when some ``bytes -> bytes``
stage verifies a checksum of what it decodes to: every later decoder either fails on the
damage or hands on different bytes, which the checksum then catches (except with
probability ~2^-32; damage that decodes to the very same bytes is harmless).  The stages
that verify one, and what they check (each as its format specifies, and as the decoder
zarrcy runs enforces):

* ``crc32c`` -- CRC-32C of the bytes before it (v3-codec-crc32c.rst; RFC 3720);
* ``zstd`` with ``checksum: true`` -- the frame's Content_Checksum, the low 32 bits of the
  XXH64 of the decoded content (RFC 8878, 3.1.1, ext-codec-zstd.md ``checksum``);
  without it a frame has none: raw / RLE blocks and literals are not checked;
* ``gzip`` -- each member's trailer: CRC-32 and ISIZE of the uncompressed data (RFC 1952,
  2.3.1), checked by libdeflate / zlib;
* numcodecs ``crc32``, ``crc32c``, ``adler32``, ``fletcher32``, ``jenkins_lookup3``
  (checksum codecs), ``zlib`` (the zlib stream's ADLER32 trailer, RFC 1950, 2.2),
  ``gzip``, ``bz2`` (bzip2: a CRC-32 per block and one for the stream), ``lzma`` in the
  ``.xz`` format (its integrity check, CRC64 unless ``check`` is 0 / none), ``zstd``
  with ``checksum``.

Never: ``bytes``, ``transpose``, array -> array codecs, ``blosc`` (the c-blosc chunk
format is a 16-byte header, block offsets and blocks -- no checksum; a block stored
uncompressed, or the literals of blosclz / lz4 blocks, decode damaged without a trace),
numcodecs ``lz4`` (LZ4 block format + a size), ``shuffle``, ``lzma`` in the raw / alone
formats.

``sharding_indexed``: the inner chunks are covered by the inner chain, the shard index by
``index_codecs`` (the spec's default ends with ``crc32c``), everything by a checksum in the
chain after the sharding codec.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chain_protection", "array_protection"]


def _stage(c: Any, v2: bool) -> str | None:
    """The checksum a bytes -> bytes stage verifies on decode, or None."""
    if not isinstance(c, dict):
        return None
    name = str(c.get("id") if v2 else c.get("name"))
    conf = c if v2 else (c.get("configuration") or {})
    if not isinstance(conf, dict):
        conf = {}
    if name.startswith("numcodecs."):
        name = name[len("numcodecs."):]
        v2 = True
    if name == "crc32c":
        return "crc32c"
    if name == "gzip":
        return "gzip (CRC-32)"
    if name == "zstd":
        return "zstd (content checksum)" if conf.get("checksum") is True else None
    if v2:
        if name in ("crc32", "adler32", "fletcher32", "jenkins_lookup3"):
            return name
        if name == "zlib":
            return "zlib (Adler-32)"
        if name == "bz2":
            return "bz2 (CRC-32)"
        if name == "lzma":
            fmt = conf.get("format", 1)
            check = conf.get("check", -1)
            return "lzma (xz integrity check)" if fmt in (None, 1) and check != 0 else None
    return None


def _describe(codecs: list[Any], v2: bool) -> str:
    out = []
    for c in codecs:
        if not isinstance(c, dict):
            continue
        name = str(c.get("id") if v2 else c.get("name"))
        conf = c if v2 else (c.get("configuration") or {})
        if name.endswith("zstd") and isinstance(conf, dict):
            name += f" (checksum {'true' if conf.get('checksum') is True else 'false'})"
        out.append(name)
    return " -> ".join(out) or "(none)"


def chain_protection(codecs: list[Any], v2: bool = False) -> dict[str, Any]:
    """What a chain detects: ``{"chunks": bool, "by": [...], "chain": text, "index": bool |
    None}`` (``index``: the shard index of a sharded chain, None otherwise)."""
    by = [s for s in (_stage(c, v2) for c in codecs) if s]
    shard = next((c for c in codecs if isinstance(c, dict) and c.get("name") == "sharding_indexed"), None)
    if shard is None:
        return {"chunks": bool(by), "by": by, "chain": _describe(codecs, v2), "index": None}
    conf = shard.get("configuration") or {}
    inner = chain_protection(list(conf.get("codecs") or []))
    index = chain_protection(list(conf.get("index_codecs") or []))
    rest = codecs[codecs.index(shard) + 1:]
    after = [s for s in (_stage(c, v2) for c in rest) if s]
    chain = f"sharding_indexed[{inner['chain']}; index {index['chain']}]" + (f" -> {_describe(rest, v2)}" if rest else "")
    return {"chunks": bool(after) or inner["chunks"], "by": after or inner["by"], "chain": chain,
            "index": bool(after) or index["chunks"]}


def array_protection(node: Any, url: str) -> dict[str, Any]:
    """:func:`chain_protection` of an array, with a one-line verdict and, where the chunks
    are not covered, a command that rewrites them with a checksum."""
    doc = node.metadata.to_json()
    v2 = doc.get("zarr_format") in (1, 2)
    if v2:
        codecs = list(doc.get("filters") or []) + ([doc["compressor"]] if doc.get("compressor") else [])
    else:
        codecs = list(doc.get("codecs") or [])
    p = chain_protection(codecs, v2)
    path = "/" + node.path
    if p["chunks"]:
        verdict = f"detected by {', '.join(p['by'])}"
        if p["index"] is False:
            verdict += " (inner chunks; the shard index has no checksum)"
        hint = None
    else:
        verdict = (f"NOT detected: {p['chain']} has no checksum; a damaged chunk can decode to wrong values "
                   "without an error")
        if p["index"]:
            verdict += " (only the shard index is checked)"
        where = f" --path {node.path}" if node.path else ""
        hint = (f"zarrcy convert {url} NEW.zarr{where} --rewrite --compressor zstd:3+crc32c "
                "(or add {\"name\": \"crc32c\"} last in --codecs)")
    return {"path": path, "detects_bit_rot": bool(p["chunks"]), "by": p["by"], "chain": p["chain"],
            "shard_index_checked": p["index"], "verdict": verdict, "hint": hint}
