"""Garbage configurations of zarr-python's ``numcodecs.*`` v3 codecs: a MetadataError
naming the JSON path, in the message form of every other codec
(``<path>.configuration.<key>: expected <what>, received <value!r>``), never a raw
TypeError/ValueError from numcodecs at open or at the first write."""

from __future__ import annotations

import re

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs import numcodecs as nc
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.errors import MetadataError

#: every numcodecs.* name zarrcy accepts, with a valid configuration (all keys given)
VALID = {
    "numcodecs.blosc": {"cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0, "typesize": 4},
    "numcodecs.lz4": {"acceleration": 1},
    "numcodecs.zstd": {"level": 3, "checksum": True},
    "numcodecs.zlib": {"level": 3},
    "numcodecs.gzip": {"level": 3},
    "numcodecs.bz2": {"level": 3},
    "numcodecs.lzma": {"format": 1, "check": -1, "preset": 1, "filters": None},
    "numcodecs.shuffle": {"elementsize": 4},
    "numcodecs.crc32": {"location": "end"},
    "numcodecs.crc32c": {"location": "start"},
    "numcodecs.adler32": {"location": None},
    "numcodecs.fletcher32": {},
    "numcodecs.jenkins_lookup3": {"initval": 7, "prefix": None},
    "numcodecs.delta": {"dtype": "<f8", "astype": "<f8"},
    "numcodecs.bitround": {"keepbits": 10},
    "numcodecs.quantize": {"digits": 3, "dtype": "<f8", "astype": "<f8"},
    "numcodecs.astype": {"encode_dtype": "<f4", "decode_dtype": "<f8"},
    "numcodecs.fixedscaleoffset": {"offset": 1.5, "scale": 10, "dtype": "<f8", "astype": "<i4"},
}
REQUIRED = {
    "numcodecs.delta": ("dtype",),
    "numcodecs.bitround": ("keepbits",),
    "numcodecs.quantize": ("digits", "dtype"),
    "numcodecs.astype": ("encode_dtype", "decode_dtype"),
    "numcodecs.fixedscaleoffset": ("offset", "scale", "dtype", "astype"),
}
NAMES = sorted(VALID)
#: values no key of any of these codecs accepts
GARBAGE = [10**30, -(10**30), "x", 1.5, {"a": 1}, [[]], True]
P = "codecs[0]"


def test_every_accepted_name_is_covered():
    assert set(NAMES) == set(nc.BYTES_BYTES) | set(nc.ARRAY_ARRAY) | {"numcodecs.fixedscaleoffset"}


def _refused(obj, path_re):
    with pytest.raises(MetadataError) as ei:
        codec_from_dict(obj, P)
    msg = str(ei.value)
    assert re.match(path_re + r": expected ", msg), msg


@pytest.mark.parametrize("name", NAMES)
def test_valid_configuration_round_trips(name):
    c = codec_from_dict({"name": name, "configuration": VALID[name]}, P)
    assert codec_from_dict(c.to_dict(), P) == c


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("config", ["level", 5, [1], True], ids=repr)
def test_non_object_configuration(name, config):
    _refused({"name": name, "configuration": config}, re.escape(f"{P}.configuration"))


@pytest.mark.parametrize("name", NAMES)
def test_unknown_key(name):
    _refused({"name": name, "configuration": {**VALID[name], "bogus": 1}}, re.escape(f"{P}.configuration.bogus"))


@pytest.mark.parametrize("name", NAMES)
def test_missing_required_key(name):
    for key in REQUIRED.get(name, ()):
        cfg = {k: v for k, v in VALID[name].items() if k != key}
        _refused({"name": name, "configuration": cfg}, re.escape(f"{P}.configuration.{key}"))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", GARBAGE, ids=repr)
def test_wrong_type_or_out_of_range(name, bad):
    for key in VALID[name]:
        if name == "numcodecs.zstd" and key == "checksum" and bad is True:
            continue  # a valid value
        if name == "numcodecs.fixedscaleoffset" and key in ("offset", "scale") and type(bad) in (int, float):
            continue  # any JSON number is a valid offset/scale
        cfg = {**VALID[name], key: bad}
        _refused({"name": name, "configuration": cfg}, re.escape(f"{P}.configuration.{key}") + r"(\[\d+\])?")


@pytest.mark.parametrize("cfg, key", [
    ({"cname": "lz5"}, "cname"), ({"clevel": 10}, "clevel"), ({"shuffle": 3}, "shuffle"), ({"shuffle": 1.0}, "shuffle"),
    ({"typesize": 0}, "typesize"), ({"blocksize": -1}, "blocksize"),
])
def test_blosc_values(cfg, key):
    _refused({"name": "numcodecs.blosc", "configuration": cfg}, re.escape(f"{P}.configuration.{key}"))


@pytest.mark.parametrize("name, cfg, key", [
    ("numcodecs.bz2", {"level": 0}, "level"),
    ("numcodecs.zlib", {"level": None}, "level"),
    ("numcodecs.lzma", {"format": 7}, "format"),
    ("numcodecs.lzma", {"check": 2}, "check"),
    ("numcodecs.lzma", {"preset": 10}, "preset"),
    ("numcodecs.lzma", {"filters": [5]}, r"filters\[0\]"),
    ("numcodecs.crc32", {"location": "middle"}, "location"),
    ("numcodecs.jenkins_lookup3", {"initval": -1}, "initval"),
    ("numcodecs.jenkins_lookup3", {"prefix": "ab"}, "prefix"),
    ("numcodecs.delta", {"dtype": "not a dtype"}, "dtype"),
    ("numcodecs.delta", {"dtype": "i4,i4"}, "dtype"),
    ("numcodecs.quantize", {"digits": 2, "dtype": "<i4"}, "dtype"),
    ("numcodecs.bitround", {"keepbits": 60}, "keepbits"),
])
def test_specific_values(name, cfg, key):
    _refused({"name": name, "configuration": cfg}, re.escape(f"{P}.configuration.") + key)


@pytest.mark.parametrize("cfg", [
    {"format": 3, "filters": [{"id": 12345}]},  # no such filter
    {"format": 3, "filters": [{"id": 33, "dict_size": 1 << 40}]},  # LZMA2 option out of range
    {"format": 0},  # FORMAT_AUTO: decoding only
    {"format": 2, "check": 4},  # integrity checks: FORMAT_XZ only
    {"preset": 1, "filters": [{"id": 33}]},  # both a preset and a filter chain
    {"format": 3},  # FORMAT_RAW without filters
    {"format": 3, "filters": [{"id": 33}, {"id": 3, "dist": 1}]},  # LZMA2 not last
], ids=repr)
def test_lzma_combinations_liblzma_refuses(cfg):
    # each key passes its own check; liblzma refuses the combination (a small trial round
    # trip at parse time, never a raw ValueError/LZMAError at the first write)
    _refused({"name": "numcodecs.lzma", "configuration": cfg}, re.escape(f"{P}.configuration") + r"(\.filters\[0\])?")


def test_lzma_trial_runs_a_small_dictionary(monkeypatch):
    """The trial round trip keeps format, check and filter chain but not the dictionary
    size: checking preset 9 must not build its ~700 MiB encoder."""
    made = []
    real = nc._numcodec
    monkeypatch.setattr(nc, "_numcodec", lambda cid, cfg, path: made.append(cfg) or real(cid, cfg, path))
    c = codec_from_dict({"name": "numcodecs.lzma", "configuration": {"preset": 9 | (1 << 31)}}, P)
    assert c.to_dict()["configuration"] == {"preset": 9 | (1 << 31)}
    assert {"preset": 0} in made
    made.clear()
    big = [{"id": 3, "dist": 4}, {"id": 33, "preset": 9, "dict_size": 1 << 30}]
    codec_from_dict({"name": "numcodecs.lzma", "configuration": {"format": 3, "filters": big}}, P)
    assert {"format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 0, "dict_size": 1 << 20}]} in made


def test_python_constructor_names_the_codec():
    with pytest.raises(MetadataError, match=re.escape("numcodecs.zlib.configuration.level: expected an integer")):
        nc.Zlib(level="x")
    with pytest.raises(MetadataError, match=re.escape("numcodecs.delta.configuration.dtype: expected a value")):
        nc.Delta()


def test_array_level_checks_name_the_codec_in_the_codecs_list():
    # bitround keepbits=30 is fine for float64 but not for float32 (23 mantissa bits):
    # refused when the array is created, at the codec's path, not at the first write
    store = zarrcy.MemoryStore()
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.keepbits: expected an integer in \[0, 23\]"):
        zarrcy.create_array(store, shape=(4,), dtype="float32", filters=[nc.BitRound(keepbits=30)], compressors=None)
    a = zarrcy.create_array(store, shape=(4,), dtype="float64", filters=[nc.BitRound(keepbits=30)], compressors=None,
                            overwrite=True)
    a[:] = np.arange(4.0)
    assert a[:].tolist() == [0.0, 1.0, 2.0, 3.0]
