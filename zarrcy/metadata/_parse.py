"""Small JSON helpers shared by the metadata parsers (v3-core.rst "Metadata", "Extensions").

Every checker takes the JSON path of the value so errors read
``<path>: expected <what>, received <value!r>`` (CONVENTIONS.md rule 4).  They are
plain functions with cheap ``type(...) is`` tests: metadata is parsed on every open.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable

import numpy as np

from zarrcy.errors import MetadataError, expected

__all__ = [
    "load_json_object",
    "expect_object",
    "expect_list",
    "expect_str",
    "expect_int",
    "expect_int_list",
    "parse_extension",
    "config_dict",
    "name_path",
    "check_keys",
    "unknown_key_error",
    "MISSING",
    "check_extension_name",
    "is_extension_name",
    "dumps",
    "normalize_json_value",
    "check_rank",
    "INT64_MAX",
    "MAX_RANK",
    "MAX_JSON_DEPTH",
]

INT64_MAX = (1 << 63) - 1

#: arrays have at most this many dimensions: numpy's own limit (NPY_MAXDIMS in numpy 2),
#: checked at open/create so ``a[...]`` never fails with numpy's ValueError later
MAX_RANK = 64

#: user JSON values (attributes) nest at most this deep (objects/arrays within each
#: other); deeper values, and values that contain themselves, are refused with
#: MetadataError on write and on read instead of exhausting the stack (RecursionError)
MAX_JSON_DEPTH = 128

# registered names: ^[a-z][a-z0-9-_.]+$ (v3-core.rst "Extension naming")
_NAME_REST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
# legacy URI names (RFC 3986 scheme followed by ':'); only tried when the cheap test fails
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S+$")


def load_json_object(data: Any, path: str = "", parse_float: Any = None) -> dict[str, Any]:
    """``bytes``/``str``/``dict`` -> the top-level object of a metadata document.

    THE loader of every JSON document zarrcy reads from a store (``zarr.json``, group
    attributes, consolidated metadata, v2 ``.zarray``/``.zgroup``/``.zattrs``/
    ``.zmetadata``, v1 ``meta``/``attrs``, the convert journal): invalid JSON, a
    document nested too deeply for the parser (``[[[[...`` 100,000 levels) and a
    top-level value that is not an object raise MetadataError naming ``path``, never
    ValueError or RecursionError.  ``parse_float``: as ``json.loads`` (e.g. Decimal)."""
    if type(data) is dict:
        return data
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        try:
            doc = json.loads(bytes(data) if isinstance(data, memoryview) else data, parse_float=parse_float)
        except (ValueError, UnicodeDecodeError) as e:
            raise MetadataError(f"{path or '<document>'}: expected a JSON document, received invalid JSON ({e})", path) from None
        except RecursionError:  # hostile nesting ([[[[...]]]]): refuse, don't crash the caller
            depth = _nesting_depth(data)
            if depth >= 200:
                what = f"JSON nested too deeply ({depth} levels)"
            else:  # the document is fine: the caller's stack was nearly exhausted
                what = f"a document of {depth} levels that could not be parsed: the Python call stack is nearly exhausted"
            raise MetadataError(f"{path or '<document>'}: expected a JSON document, received {what}", path) from None
    elif isinstance(data, dict):
        doc = data
    else:
        raise MetadataError(expected(path or "<document>", "JSON bytes, str or dict", type(data).__name__), path)
    if type(doc) is not dict:
        raise MetadataError(expected(path or "<document>", "a JSON object", doc), path)
    return doc


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _nesting_depth(data: Any) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text (for error messages only)."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else bytes(data)
    b = np.frombuffer(_JSON_STRING.sub(b"", raw), dtype=np.uint8)
    if not b.size:
        return 0
    step = ((b == 0x5B) | (b == 0x7B)).astype(np.int64) - ((b == 0x5D) | (b == 0x7D))
    return int(np.cumsum(step).max())


def expect_object(value: Any, path: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise MetadataError(expected(path, "an object", value), path)
    return value


def expect_list(value: Any, path: str) -> list[Any]:
    """A JSON array: a list (returned as is) or a tuple, as Python callers pass them (as a list)."""
    if type(value) is list:
        return value
    if type(value) is not tuple:
        raise MetadataError(expected(path, "an array", value), path)
    return list(value)


def expect_str(value: Any, path: str) -> str:
    if type(value) is not str:
        raise MetadataError(expected(path, "a string", value), path)
    return value


def expect_int(value: Any, path: str, minimum: int = 0, maximum: int = INT64_MAX) -> int:
    """A JSON integer (never a bool, never ``1.0``) in ``[minimum, maximum]``."""
    if type(value) is not int:
        if isinstance(value, np.integer):
            value = int(value)
        else:
            raise MetadataError(expected(path, f"an integer in [{minimum}, {maximum}]", value), path)
    if value < minimum or value > maximum:
        raise MetadataError(expected(path, f"an integer in [{minimum}, {maximum}]", value), path)
    return value


def expect_int_list(value: Any, path: str, minimum: int = 0, maximum: int = INT64_MAX) -> tuple[int, ...]:
    items = expect_list(value, path)
    out = []
    for i, v in enumerate(items):
        if type(v) is int and minimum <= v <= maximum:
            out.append(v)
        else:
            out.append(expect_int(v, f"{path}[{i}]", minimum, maximum))
    return tuple(out)


def is_extension_name(name: str) -> bool:
    """Registered form ``^[a-z][a-z0-9-_.]+$`` or a legacy URI."""
    if len(name) >= 2 and "a" <= name[0] <= "z" and _NAME_REST.issuperset(name):
        return True
    return _URI.match(name) is not None


def check_extension_name(name: Any, path: str) -> str:
    if type(name) is not str or not is_extension_name(name):
        raise MetadataError(
            expected(path, "an extension name matching ^[a-z][a-z0-9-_.]+$ or a URI", name), path
        )
    return name


_EXT_KEYS = ("name", "configuration", "must_understand")


class _Missing:
    """The ``received`` value of a required key that is absent (prints ``<missing>``)."""

    def __repr__(self) -> str:
        return "<missing>"


#: stands for an absent value in messages and as a "no default" marker
MISSING: Any = _Missing()


def unknown_key_error(path: str, key: Any, allowed: Iterable[str]) -> MetadataError:
    """The one message for a key a JSON object may not have (extension objects and
    their configurations alike): the JSON path of the offending key, then the keys the
    object may have."""
    names = ", ".join(allowed)
    what = f"one of the keys ({names})" if names else "no keys (this object takes none)"
    p = f"{path}.{key}"
    return MetadataError(expected(p, what, key), p)


def check_keys(obj: dict[str, Any], path: str, allowed: Iterable[str]) -> None:
    """Refuse keys of ``obj`` (at JSON path ``path``) that are not in ``allowed``."""
    allowed = tuple(allowed)
    for k in obj:
        if k not in allowed:
            raise unknown_key_error(path, k, allowed)


def parse_extension(
    value: Any, path: str, *, ignorable: bool = True, what: str = "extension"
) -> tuple[str, dict[str, Any] | None, bool]:
    """An extension definition -> ``(name, configuration or None, must_understand)``
    (v3-core.rst "Extension definition").

    Accepts the object form ``{"name", "configuration"?, "must_understand"?}`` and the
    short-hand name (a plain string is an object with just ``name``).  ``name`` must be
    an extension name, ``configuration`` (when present) an object, ``must_understand``
    (when present) a JSON boolean -- ``true`` or ``false``, nothing else -- and no other
    key is allowed.  ``ignorable=False`` is for the extension points where
    ``must_understand: false`` is not supported (data type, chunk grid, chunk key
    encoding: v3-core.rst "must_understand"); ``what`` names the point in that message.
    """
    if isinstance(value, str):
        return check_extension_name(value, path), None, True
    if not isinstance(value, dict):
        raise MetadataError(expected(path, f"a name or an object ({what})", value), path)
    if "name" not in value:
        raise MetadataError(expected(f"{path}.name", "an extension name (the key is required)", MISSING), f"{path}.name")
    check_keys(value, path, _EXT_KEYS)
    name = check_extension_name(value["name"], f"{path}.name")
    config = value.get("configuration", MISSING)
    if config is MISSING:
        config = None
    elif not isinstance(config, dict):
        raise MetadataError(expected(f"{path}.configuration", "an object", config), f"{path}.configuration")
    mu = value.get("must_understand", True)
    if type(mu) is not bool:  # JSON true/false only: not 0/1, not "false", not null
        raise MetadataError(expected(f"{path}.must_understand", "true or false", mu), f"{path}.must_understand")
    if not mu and not ignorable:
        raise MetadataError(
            expected(f"{path}.must_understand", f"true (must_understand=false is not allowed for {what}s)", mu),
            f"{path}.must_understand",
        )
    return name, config, mu


def name_path(value: Any, path: str) -> str:
    """The JSON path of an extension's name: the value itself for a short-hand name,
    ``<path>.name`` for the object form (where unknown names are reported)."""
    return path if isinstance(value, str) else f"{path}.name"


def config_dict(
    configuration: Any, path: str, allowed: Iterable[str] | None, required: Iterable[str] = ()
) -> dict[str, Any]:
    """An extension's ``configuration`` as a dict; ``path`` is the extension's JSON path
    (errors name ``<path>.configuration[.<key>]``).

    ``None`` (absent) reads as ``{}``.  Keys outside ``allowed`` are refused
    (CONVENTIONS.md rule 3) with :func:`unknown_key_error`'s message; ``allowed=None``
    accepts any key (free-form configurations such as numcodecs').  A missing
    ``required`` key is refused at its own path (``<path>.configuration.<key>``),
    whether the configuration lacks it or is absent altogether.
    """
    cpath = f"{path}.configuration"
    if configuration is None:
        configuration = {}
    elif not isinstance(configuration, dict):
        raise MetadataError(expected(cpath, "an object", configuration), cpath)
    if allowed is not None:
        check_keys(configuration, cpath, allowed)
    for k in required:
        if k not in configuration:
            p = f"{cpath}.{k}"
            raise MetadataError(expected(p, "a value (the key is required)", MISSING), p)
    return configuration


def _json_default(obj: Any) -> Any:
    """Let numpy scalars/arrays in user attributes serialise as their JSON equivalents."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return _finite_or_name(float(obj))
    if isinstance(obj, np.ndarray):
        return _replace_nonfinite(obj.tolist())
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _finite_or_name(v: float) -> Any:
    if math.isfinite(v):
        return v
    if v != v:
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def _replace_nonfinite(obj: Any) -> Any:
    """Float NaN/inf anywhere in ``obj`` -> the strings "NaN"/"Infinity"/"-Infinity"."""
    t = type(obj)
    if t is float:
        return _finite_or_name(obj)
    if t is dict:
        return {k: _replace_nonfinite(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [_replace_nonfinite(v) for v in obj]
    if isinstance(obj, (np.floating, np.ndarray)):
        return _json_default(obj)
    return obj


def dumps(doc: dict[str, Any]) -> bytes:
    """Deterministic JSON for a metadata document (one line, key order kept, ASCII with
    ``\\u`` escapes).  No indentation: the stdlib only uses its C encoder without
    ``indent``, and this runs for every node created (5x faster than ``indent=2``).

    NaN/Infinity are never written as bare tokens (they are not JSON): float NaN/inf
    inside ``attributes`` (or any other user value) are written as the strings
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` -- the fill-value spelling.  Reading
    accepts bare tokens (zarr-python writes them in attributes), so such attributes
    come back as strings after a zarrcy rewrite.
    """
    try:
        try:
            text = json.dumps(doc, sort_keys=False, allow_nan=False, default=_json_default)
        except ValueError:  # a float NaN/inf somewhere: spell it as a string
            text = json.dumps(_replace_nonfinite(doc), sort_keys=False, allow_nan=False, default=_json_default)
    except TypeError as e:
        raise MetadataError(f"<document>: expected JSON-serialisable values, received {e}") from None
    return text.encode("utf-8")


def check_rank(shape: Any, path: str) -> None:
    """Refuse more than MAX_RANK dimensions (numpy cannot hold such arrays)."""
    if len(shape) > MAX_RANK:
        raise MetadataError(expected(path, f"at most {MAX_RANK} dimensions (numpy's limit)", f"{len(shape)} dimensions"), path)


_NATIVE_SCALARS = frozenset((str, int, float, bool, type(None)))
_END: Any = object()  # end-of-container sentinel for next()


def _key_path(path: str, keys: list[Any]) -> str:
    out = path
    for k in keys:
        out = f"{out}[{k}]" if type(k) is int else f"{out}.{k}"
    return out


def _json_key(k: Any) -> str:
    """An object key as ``json.dumps`` writes it (so reopening gives the same key)."""
    if isinstance(k, (bool, np.bool_)):
        return "true" if k else "false"
    if k is None:
        return "null"
    if isinstance(k, (float, np.floating)):
        return json.dumps(_finite_or_name(float(k))).strip('"')
    return str(int(k))


def _scan(value: Any, path: str, max_depth: int, max_values: int | None = None) -> bool:
    """Validate a JSON value without recursion; True if it needs converting to plain
    JSON types (tuples, numpy values, non-string keys), False if it is plain already.

    A container referenced several times (a shared, non-cyclic sub-object: written once
    per reference) is walked once: its height and its number of JSON values once
    written are remembered, so the work is linear in the distinct containers even when
    the written document would be exponentially larger; more than ``max_values`` values
    once written is refused (every value takes at least one byte of the document)."""
    t = type(value)
    if t in _NATIVE_SCALARS:
        return False
    needs = False
    if t is not dict and t is not list:
        if isinstance(value, (np.generic, np.ndarray, tuple, dict, list)):
            needs = True
            if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.dtype.kind != "O"):
                return True
        else:
            raise MetadataError(expected(path, "a JSON value (dict, list, str, int, float, bool or None)", type(value).__name__), path)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    # per open container: [items, the container, height of its children, values below it]
    stack: list[list[Any]] = [[iter(value.items()) if isinstance(value, dict) else enumerate(value), value, 0, 0]]
    keys: list[Any] = []  # the key of each open container below the top one (for messages)
    on_path = {id(value)}
    done: dict[int, tuple[Any, int, int]] = {}  # id -> (container, height, values): walked already
    while stack:
        top = stack[-1]
        item = next(top[0], _END)
        if item is _END:
            stack.pop()
            on_path.discard(id(top[1]))
            height, count = top[2] + 1, top[3] + 1
            done[id(top[1])] = (top[1], height, count)  # the container is kept: its id cannot be reused
            if stack:
                keys.pop()
                parent = stack[-1]
                parent[2] = max(parent[2], height)
                parent[3] += count
            if max_values is not None and count > max_values:
                raise MetadataError(expected(path, f"a JSON value of at most {max_values} values once written "
                                             "(max_metadata_bytes; a shared sub-object is written once per "
                                             "reference)", f"{count} values"), path)
            continue
        k, v = item
        if type(k) is not str and type(top[0]) is not enumerate:  # an object key that is not a string
            if isinstance(k, (int, float, bool, np.integer, np.floating, np.bool_)) or k is None:
                needs = True
            else:
                p = _key_path(path, keys)
                raise MetadataError(expected(p, "object keys that are strings", k), p)
        tv = type(v)
        if tv in _NATIVE_SCALARS:
            top[3] += 1
            continue
        if tv is not dict and tv is not list:
            if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.dtype.kind != "O"):
                needs = True
                top[3] += 1 if isinstance(v, np.generic) else v.size + 1
                continue
            if isinstance(v, (tuple, dict, list, np.ndarray)):
                needs = True
                if isinstance(v, np.ndarray):
                    v = v.tolist()
            else:
                p = _key_path(path, keys + [k])
                raise MetadataError(expected(p, "a JSON value (dict, list, str, int, float, bool or None)", type(v).__name__), p)
        if id(v) in on_path:
            p = _key_path(path, keys + [k])
            raise MetadataError(expected(p, "a JSON value", "a value that contains itself"), p)
        hit = done.get(id(v))
        if hit is not None:  # a shared sub-object, walked already: its height and size apply here too
            if len(stack) + hit[1] > max_depth:
                p = _key_path(path, keys + [k])
                raise MetadataError(expected(p, f"a JSON value nested at most {max_depth} levels deep", "deeper nesting"), p)
            top[2] = max(top[2], hit[1])
            top[3] += hit[2]
            continue
        if len(stack) >= max_depth:
            p = _key_path(path, keys + [k])
            raise MetadataError(expected(p, f"a JSON value nested at most {max_depth} levels deep", "deeper nesting"), p)
        keys.append(k)
        on_path.add(id(v))
        stack.append([iter(v.items()) if isinstance(v, dict) else enumerate(v), v, 0, 0])
    return needs


def _plain(value: Any) -> Any:
    """Plain JSON types for a value _scan accepted (bounded depth: recursion is safe)."""
    t = type(value)
    if t in _NATIVE_SCALARS:
        return value
    if isinstance(value, np.generic):
        return value.item() if not isinstance(value, np.floating) else float(value)
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, dict):
        return {k if type(k) is str else _json_key(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value]


def normalize_json_value(value: Any, path: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``value`` (e.g. a node's attributes) as the plain JSON it reads back as.

    Refuses, with MetadataError naming the JSON path, values that are not JSON (sets,
    objects), nested deeper than ``max_depth``, containing themselves, or too large to
    be read back once written (more values than ``max_metadata_bytes``, counting a
    shared sub-object once per reference) -- all without recursion, in time linear in
    the distinct containers.  Tuples, numpy scalars/arrays and non-string object keys (``1``,
    ``True``, ``None``) are converted as ``json.dumps`` writes them, so the live
    object and a reopened one agree; plain values are returned unchanged (no copy).
    Float NaN/Infinity stay floats (they are written as the strings "NaN"/"Infinity").
    """
    from zarrcy.config import get

    if not _scan(value, path, max_depth, int(get("max_metadata_bytes"))):
        return value
    return _plain(value)
