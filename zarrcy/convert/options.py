"""Parsing of the ``zarrcy convert`` option strings (shared by the CLI and the Python API).

* ``--chunks 256,256`` / ``--shards 2048,2048``: comma-separated sizes;
* ``--compressor``: ``none``, ``gzip:LEVEL``, ``zstd:LEVEL``, ``blosc:CNAME:CLEVEL:SHUFFLE``
  (``SHUFFLE``: ``noshuffle``/``shuffle``/``bitshuffle``), ``crc32c`` may follow after ``+``
  (``zstd:3+crc32c``);
* ``--codecs JSON``: the inner chain as v3 JSON (array->array*, array->bytes,
  bytes->bytes*), e.g. ``[{"name": "bytes", ...}, {"name": "zstd", ...}]``;
* ``--quantize scale=..,offset=..,dtype=uint8,rounding=..,out_of_range=..,nan=0``:
  ``[scale_offset{offset, scale}, cast_value{data_type, rounding, out_of_range,
  scalar_map}]`` where ``nan=V`` maps NaN to ``V`` on encode and ``V`` back to NaN on
  decode (ext-codec-cast_value.md "scalar_map"); ``fill=CODE`` stores the source's
  numeric fill value as ``CODE`` (given as an encoded integer; the scalar_map entry in
  scaled units is derived per array by :mod:`zarrcy.convert.cf`), ``collisions=allow``
  accepts data values that encode to a sentinel code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zarrcy.errors import MetadataError, expected

__all__ = ["parse_shape", "parse_compressor", "parse_codecs_json", "parse_quantize", "quantize_options",
           "compressor_to_numcodecs", "Settings", "parse_settings"]

_SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")


def parse_shape(value: Any, name: str) -> tuple[int, ...] | None:
    """``"256,256"`` (or a sequence of ints) -> a tuple of positive ints; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        try:
            out = tuple(int(p) for p in parts)
        except ValueError:
            raise MetadataError(expected(name, "comma-separated positive integers", value), name) from None
    else:
        try:
            out = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise MetadataError(expected(name, "a sequence of positive integers", value), name) from None
    if not out or any(v < 1 for v in out):
        raise MetadataError(expected(name, "positive integers", value), name)
    return out


def parse_compressor(value: Any) -> list[dict[str, Any]] | None:
    """A compressor spec (see module docstring) -> v3 bytes->bytes codec JSON objects."""
    if value is None:
        return None
    if isinstance(value, list):
        return value
    s = str(value).strip()
    out: list[dict[str, Any]] = []
    for part in s.split("+"):
        f = part.strip().split(":")
        name = f[0].lower()
        try:
            if name in ("none", ""):
                if len(f) != 1:
                    raise ValueError
            elif name == "gzip":
                out.append({"name": "gzip", "configuration": {"level": int(f[1]) if len(f) > 1 else 5}})
            elif name == "zstd":
                out.append({"name": "zstd", "configuration": {"level": int(f[1]) if len(f) > 1 else 0, "checksum": False}})
            elif name == "blosc":
                cname = f[1] if len(f) > 1 else "zstd"
                clevel = int(f[2]) if len(f) > 2 else 5
                shuffle = f[3] if len(f) > 3 else "shuffle"
                if shuffle not in _SHUFFLES:
                    raise ValueError
                out.append({"name": "blosc", "configuration": {"cname": cname, "clevel": clevel, "shuffle": shuffle}})
            elif name == "crc32c":
                out.append({"name": "crc32c"})
            else:
                raise ValueError
            if name in ("gzip", "zstd") and len(f) > 2:
                raise ValueError
        except (ValueError, IndexError):
            raise MetadataError(
                expected("--compressor", "none, gzip:LEVEL, zstd:LEVEL or blosc:CNAME:CLEVEL:SHUFFLE (optionally +crc32c)", value),
                "--compressor",
            ) from None
    return out


def compressor_to_numcodecs(codecs: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The v2 ``compressor`` for a parsed ``--compressor`` (one codec at most)."""
    if not codecs:
        return None
    if len(codecs) > 1:
        raise MetadataError(expected("--compressor", "a single compressor for --format 2", codecs), "--compressor")
    c = codecs[0]
    cfg = dict(c.get("configuration") or {})
    if c["name"] == "gzip":
        return {"id": "gzip", "level": cfg.get("level", 5)}
    if c["name"] == "zstd":
        out = {"id": "zstd", "level": cfg.get("level", 0)}
        if cfg.get("checksum"):
            out["checksum"] = True  # omitted when false, as zarr-python writes it
        return out
    if c["name"] == "blosc":
        return {"id": "blosc", "cname": cfg.get("cname", "zstd"), "clevel": cfg.get("clevel", 5),
                "shuffle": _SHUFFLES.index(cfg.get("shuffle", "shuffle")), "blocksize": 0}
    raise MetadataError(expected("--compressor", "gzip, zstd or blosc for --format 2", c["name"]), "--compressor")


def parse_codecs_json(value: Any) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    try:
        doc = json.loads(value)
    except ValueError as e:
        raise MetadataError(f"--codecs: expected a JSON list of codecs, received invalid JSON ({e})", "--codecs") from None
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise MetadataError(expected("--codecs", "a JSON list of codecs", value), "--codecs")
    return doc


_Q_KEYS = ("scale", "offset", "dtype", "rounding", "out_of_range", "nan", "fill", "collisions")


def _scalar(text: str) -> Any:
    if text in ("NaN", "Infinity", "-Infinity"):
        return text
    try:
        v = json.loads(text)
    except ValueError:
        return text
    return v


def parse_quantize(value: Any) -> list[dict[str, Any]] | None:
    """``scale=..,offset=..,dtype=..`` (or a dict of those) -> ``[scale_offset, cast_value]`` JSON
    (``fill=`` and ``collisions=`` concern the source's fill value: :func:`quantize_options`)."""
    opts = _quantize_dict(value)
    if opts is None:
        return None
    so: dict[str, Any] = {}
    if "offset" in opts:
        so["offset"] = opts["offset"]
    if "scale" in opts:
        so["scale"] = opts["scale"]
    cv: dict[str, Any] = {"data_type": str(opts["dtype"])}
    if "rounding" in opts:
        cv["rounding"] = str(opts["rounding"])
    if "out_of_range" in opts:
        cv["out_of_range"] = str(opts["out_of_range"])
    if "nan" in opts:
        cv["scalar_map"] = {"encode": [["NaN", opts["nan"]]], "decode": [[opts["nan"], "NaN"]]}
    return [{"name": "scale_offset", "configuration": so}, {"name": "cast_value", "configuration": cv}]


def quantize_options(value: Any) -> dict[str, Any]:
    """The ``fill=CODE`` and ``collisions=refuse|allow`` keys of ``--quantize`` (validated):
    ``fill``: the code the source's numeric fill value (``_FillValue``/``missing_value``)
    is stored as (None: chosen automatically); ``collisions``: whether data values that
    encode to a sentinel code (``nan=``/``fill=``) are refused (the default) or allowed."""
    opts = _quantize_dict(value) or {}
    fill = opts.get("fill")
    if fill is not None and (isinstance(fill, bool) or not isinstance(fill, (int, float)) or fill != int(fill)):
        raise MetadataError(expected("--quantize.fill", "an integer code of the target data type", fill),
                            "--quantize.fill")
    nan = opts.get("nan")
    if fill is not None and nan is not None and not isinstance(nan, str) and nan == fill:
        raise MetadataError(expected("--quantize.fill", f"a code other than nan={nan} (each sentinel needs its own code)",
                                     fill), "--quantize.fill")
    coll = opts.get("collisions", "refuse")
    if coll not in ("refuse", "allow"):
        raise MetadataError(expected("--quantize.collisions", "'refuse' or 'allow'", coll), "--quantize.collisions")
    return {"fill": None if fill is None else int(fill), "collisions": coll}


def _quantize_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        opts = dict(value)
    else:
        opts = {}
        for part in str(value).split(","):
            if not part.strip():
                continue
            k, sep, v = part.partition("=")
            k = k.strip()
            if not sep or k not in _Q_KEYS:
                raise MetadataError(expected("--quantize", f"key=value pairs with keys {_Q_KEYS}", part), "--quantize")
            opts[k] = _scalar(v.strip())
    unknown = set(opts) - set(_Q_KEYS)
    if unknown:
        raise MetadataError(expected("--quantize", f"keys among {_Q_KEYS}", sorted(unknown)), "--quantize")
    if "dtype" not in opts:
        raise MetadataError(expected("--quantize.dtype", "a target data type (e.g. uint8)", None), "--quantize.dtype")
    return opts


@dataclass(frozen=True)
class Settings:
    """The conversion options, parsed and checked once before anything is planned (an
    error names the option, never the first array): what the planner and the runners
    take as their declared inputs."""

    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None
    codecs: list[Any] | None
    compressor: list[dict[str, Any]] | None
    quantize: list[dict[str, Any]] | None
    quantize_opts: dict[str, Any]
    zarr_format: int
    region_bytes: int
    rewrite: bool
    cf_packing: str
    on_unsupported: str

    @property
    def changes_layout(self) -> bool:
        """An option asks for other chunks, shards, codecs or values than the source's."""
        return any(x is not None for x in (self.chunks, self.shards, self.codecs, self.compressor, self.quantize))


def parse_settings(o: Any) -> Settings:
    """``ConvertOptions`` -> :class:`Settings`; MetadataError naming the option (``--chunks``,
    ``--region-mb``, ``--progress-interval``, ``--quantize.fill``...) for a bad value."""
    for name, value, kind in (("--region-mb", o.region_bytes, "a positive size"),
                              ("--progress-interval", o.progress_interval, "a positive number of seconds")):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value == value
        if not ok:
            raise MetadataError(expected(name, kind, value), name)
    fmt = o.zarr_format
    if fmt not in (2, 3) or isinstance(fmt, bool):
        raise MetadataError(expected("--format", "2 or 3", fmt), "--format")
    codecs, comp = parse_codecs_json(o.codecs), parse_compressor(o.compressor)
    if codecs is not None and comp is not None:
        raise MetadataError("--codecs and --compressor: expected one of them, received both", "--codecs")
    quant = parse_quantize(o.quantize)
    if quant is not None:
        from zarrcy.casting import parse_codecs

        try:  # the chain itself (data type, rounding, out_of_range, nan code), before any array
            parse_codecs(quant, "--quantize")
        except (MetadataError, ValueError) as e:
            raise MetadataError(f"--quantize: {e}", "--quantize") from None
    if fmt == 2 and (codecs is not None or quant is not None):
        raise MetadataError("--codecs/--quantize: not supported with --format 2 (use --compressor)", "--format")
    shards, chunks = parse_shape(o.shards, "--shards"), parse_shape(o.chunks, "--chunks")
    if shards is not None and chunks is not None and len(shards) != len(chunks):
        raise MetadataError(expected("--chunks", f"{len(shards)} sizes (the rank of --shards)",
                                     ",".join(map(str, chunks))), "--chunks")
    if fmt == 2 and shards is not None:
        raise MetadataError("--shards: Zarr v2 has no sharding (use --format 3)", "--shards")
    if fmt == 2 and comp is not None:
        compressor_to_numcodecs(comp)  # one compressor at most, with a numcodecs form
    return Settings(chunks, shards, codecs, comp, quant, quantize_options(o.quantize),
                    int(fmt), int(o.region_bytes), bool(o.rewrite), o.cf_packing, o.on_unsupported)
