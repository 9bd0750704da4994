"""The shared store suite: every test runs against LocalStore, MemoryStore and ZipStore.

Store-specific behaviour (symlinks, crash safety, zip members) lives in the other files
of this directory; everything the abstract interface promises (v3-core.rst "Abstract
store interface") is checked here for all stores alike.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.errors import ReadOnlyError, StoreError
from zarrcy.storage import Store, StorePath, store_from_url

VALUE = b"0123456789"


# -- get / set ------------------------------------------------------------------------------
def test_get_set_missing(store):
    assert store.get("a") is None
    assert not store.exists("a")
    store.set("a", b"x")
    assert store.get("a") == b"x"
    assert store.exists("a")
    store.set("d/b/c", b"")
    assert store.get("d/b/c") == b""
    assert store.exists("d/b/c")
    assert store.get("d/b") is None  # a "directory" is not a key
    assert not store.exists("d/b")
    assert store.get("zarr.json") is None


def test_overwrite_latest_wins(store):
    store.set("k", b"first")
    store.set("k", b"second value")
    assert store.get("k") == b"second value"
    store.set("k", b"3")
    assert store.get("k") == b"3"


@pytest.mark.parametrize(
    "value",
    [b"abc", bytearray(b"abc"), memoryview(b"abc"), np.frombuffer(b"abc", dtype="u1")],
    ids=["bytes", "bytearray", "memoryview", "ndarray"],
)
def test_set_buffer_types(store, value):
    store.set("v", value)
    got = store.get("v")
    assert type(got) is bytes and got == b"abc"


def test_set_multibyte_ndarray(store):
    a = np.arange(6, dtype="<u2").reshape(2, 3)
    store.set("arr", a)
    assert store.get("arr") == a.tobytes()


def test_set_copies_value(store):
    buf = bytearray(b"abc")
    store.set("v", buf)
    buf[0] = ord("z")
    assert store.get("v") == b"abc"


def test_set_rejects_non_buffer(store):
    with pytest.raises(StoreError):
        store.set("v", "a str")
    with pytest.raises(StoreError):
        store.set("v", 12)


def test_keys_are_case_sensitive(store, factory):
    if factory.kind.startswith("local"):
        import os

        probe = os.path.join(store.root, "CaseProbe")
        open(probe, "w").close()
        insensitive = os.path.exists(os.path.join(store.root, "caseprobe"))
        os.unlink(probe)
        if insensitive:
            pytest.skip("case-insensitive file system")
    store.set("foo", b"a")
    store.set("FOO", b"b")
    assert store.get("foo") == b"a" and store.get("FOO") == b"b"


def test_unicode_keys(store):
    store.set("dír/ключ/鍵", b"u")
    assert store.get("dír/ключ/鍵") == b"u"
    assert sorted(store.list()) == ["dír/ключ/鍵"]


def test_dotted_names_are_keys(store):
    for k in ["zarr.json", ".zattrs", "a/.zarray", "..a", "a/b.", "a/...", "c/0.1"]:
        store.set(k, k.encode())
    for k in ["zarr.json", ".zattrs", "a/.zarray", "..a", "a/b.", "a/...", "c/0.1"]:
        assert store.get(k) == k.encode()


# -- byte ranges ----------------------------------------------------------------------------
RANGES = [
    (RangeRequest(0, 3), b"012"),
    (RangeRequest(3, 4), b"3456"),
    (RangeRequest(3), b"3456789"),
    (RangeRequest(3, None), b"3456789"),
    (RangeRequest(0, None), VALUE),
    (RangeRequest(0, 10), VALUE),
    (RangeRequest(8, 10), b"89"),  # past the end: clipped
    (RangeRequest(10, 1), b""),
    (RangeRequest(25, 5), b""),  # entirely past the end
    (RangeRequest(25), b""),
    (RangeRequest(4, 0), b""),  # length 0
    (SuffixRequest(4), b"6789"),
    (SuffixRequest(10), VALUE),
    (SuffixRequest(100), VALUE),  # longer than the value: the whole value
    (SuffixRequest(0), b""),
    (RangeRequest(np.int64(2), np.int64(2)), b"23"),
]


@pytest.mark.parametrize("rng,expected", RANGES, ids=[repr(r) for r, _ in RANGES])
def test_ranges(store, rng, expected):
    store.set("r/v", VALUE)
    assert store.get("r/v", rng) == expected
    assert store.get_partial_values([("r/v", rng)]) == [expected]


@pytest.mark.parametrize("rng", [RangeRequest(0, 5), RangeRequest(3), SuffixRequest(2), RangeRequest(0, 0)])
def test_ranges_of_empty_value(store, rng):
    store.set("e", b"")
    assert store.get("e", rng) == b""


def test_range_of_missing_key(store):
    assert store.get("nope", RangeRequest(0, 3)) is None
    assert store.get("nope", SuffixRequest(3)) is None


@pytest.mark.parametrize(
    "rng", [RangeRequest(-1, 2), RangeRequest(0, -2), SuffixRequest(-1), RangeRequest(1.5, 2), (0, 3), "0-3"]
)
def test_bad_ranges(store, rng):
    store.set("k", VALUE)
    with pytest.raises(StoreError):
        store.get("k", rng)
    with pytest.raises(StoreError):
        store.get_partial_values([("k", rng)])


def test_ranges_of_large_value(store):
    value = np.random.default_rng(0).integers(0, 256, 3 << 20, dtype="u1").tobytes()
    store.set("big", value)
    assert store.get("big", RangeRequest(1 << 20, 17)) == value[1 << 20 : (1 << 20) + 17]
    assert store.get("big", SuffixRequest(1000)) == value[-1000:]
    assert store.get("big") == value


def test_get_partial_values_order(store):
    store.set("a", b"aaaaAAAA")
    store.set("b/c", b"0123456789")
    reqs = [
        ("b/c", SuffixRequest(2)),
        ("a", RangeRequest(4, 2)),
        ("missing", None),
        ("b/c", RangeRequest(0, 3)),
        ("a", None),
        ("b/c", RangeRequest(5)),
        ("missing", RangeRequest(0, 1)),
        ("b/c", RangeRequest(0, 3)),  # the same range twice
    ]
    assert store.get_partial_values(reqs) == [b"89", b"AA", None, b"012", b"aaaaAAAA", b"56789", None, b"012"]
    assert store.get_partial_values([]) == []


# -- partial writes -------------------------------------------------------------------------
def test_set_partial_values(store):
    if not store.supports_partial_writes:
        with pytest.raises(StoreError):
            store.set_partial_values([("p", 0, b"x")])
        return
    store.set("p", b"0123456789")
    store.set_partial_values([("p", 2, b"ab"), ("p", 8, b"XYZ"), ("q/new", 3, b"zz")])
    assert store.get("p") == b"01ab4567XYZ"
    assert store.get("q/new") == b"\x00\x00\x00zz"  # created; the gap reads as zeros
    store.set_partial_values([("p", 0, np.frombuffer(b"!!", dtype="u1"))])
    assert store.get("p") == b"!!ab4567XYZ"
    with pytest.raises(StoreError):
        store.set_partial_values([("p", -1, b"x")])


# -- erase ----------------------------------------------------------------------------------
def _fill(store, keys):
    for k in keys:
        store.set(k, k.encode())


KEYS = ["zarr.json", "a/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "a/b/zarr.json", "ab/x", "b"]


def test_erase(store):
    _fill(store, KEYS)
    if not store.supports_deletes:
        for call in (lambda: store.erase("b"), lambda: store.erase_values(["x", "b"]), lambda: store.erase_prefix("a/")):
            with pytest.raises(StoreError, match="append-only"):
                call()
        assert store.get("b") == b"b"
        # erasing what is not there is fine even for an append-only store
        store.erase("never/was")
        store.erase_values(["x", "y/z"])
        store.erase_prefix("nothing/")
        assert sorted(store.list()) == sorted(KEYS)
        return
    store.erase("a/c/0/1")
    assert store.get("a/c/0/1") is None
    store.erase("a/c/0/1")  # absent: no error
    store.erase("never/was")
    store.erase("a/c")  # a "directory", not a key: nothing happens
    assert store.get("a/c/0/0") == b"a/c/0/0"
    store.erase_values(["b", "zarr.json", "missing"])
    assert sorted(store.list()) == ["a/b/zarr.json", "a/c/0/0", "a/c/1/0", "a/zarr.json", "ab/x"]


def test_erase_prefix(store):
    if not store.supports_deletes:
        pytest.skip("append-only store (covered by test_erase)")
    _fill(store, KEYS)
    store.erase_prefix("a/c/")
    assert sorted(store.list()) == ["a/b/zarr.json", "a/zarr.json", "ab/x", "b", "zarr.json"]
    assert store.list_dir("a/") == ["b", "zarr.json"]  # the emptied "c" is gone
    store.erase_prefix("a/")
    assert sorted(store.list()) == ["ab/x", "b", "zarr.json"]
    assert store.list_dir("") == ["ab", "b", "zarr.json"]
    store.erase_prefix("nothing/here/")
    store.erase_prefix("")
    assert list(store.list()) == []
    assert store.list_dir("") == []
    store.set("again", b"1")  # the store still works after being emptied
    assert store.get("again") == b"1"


def test_erase_prefix_without_slash(store):
    if not store.supports_deletes:
        pytest.skip("append-only store")
    _fill(store, KEYS)
    store.erase_prefix("a")  # plain string prefix: "a/...", "ab/x"
    assert sorted(store.list()) == ["b", "zarr.json"]
    assert store.list_dir("") == ["b", "zarr.json"]


# -- listing --------------------------------------------------------------------------------
def test_list_empty(store):
    assert list(store.list()) == []
    assert list(store.list_prefix("")) == []
    assert list(store.list_prefix("a/")) == []
    assert store.list_dir("") == []
    assert store.list_dir("a/") == []


def test_list(store):
    _fill(store, KEYS)
    assert sorted(store.list()) == sorted(KEYS)
    assert sorted(store.list_prefix("")) == sorted(KEYS)
    assert sorted(store.list_prefix("a/")) == ["a/b/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "a/zarr.json"]
    assert sorted(store.list_prefix("a/c/")) == ["a/c/0/0", "a/c/0/1", "a/c/1/0"]
    assert sorted(store.list_prefix("a/c/0/")) == ["a/c/0/0", "a/c/0/1"]
    assert sorted(store.list_prefix("a")) == ["a/b/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "a/zarr.json", "ab/x"]
    assert sorted(store.list_prefix("a/c/0/0")) == ["a/c/0/0"]
    assert list(store.list_prefix("zz/")) == []
    assert list(store.list_prefix("b/")) == []  # "b" is a key, not a directory


def test_list_dir(store):
    _fill(store, KEYS)
    assert store.list_dir("") == ["a", "ab", "b", "zarr.json"]
    assert store.list_dir("a/") == ["b", "c", "zarr.json"]
    assert store.list_dir("a") == ["b", "c", "zarr.json"]  # missing trailing "/" tolerated
    assert store.list_dir("a/c/") == ["0", "1"]
    assert store.list_dir("a/c/0/") == ["0", "1"]
    assert store.list_dir("nope/") == []
    assert store.list_dir("b/") == []


def test_spec_listing_examples(factory):
    # v3-core.rst "Abstract store interface", list_prefix and list_dir examples
    store = factory.new()
    _fill(store, ["a/b", "a/c/d", "e/f/g"])
    assert sorted(store.list_prefix("a/")) == ["a/b", "a/c/d"]
    store2 = factory.new()
    _fill(store2, ["a/b", "a/c", "a/d/e", "a/f/g"])
    assert store2.list_dir("a/") == ["b", "c", "d", "f"]
    assert store2.list_dir("b/") == []


# -- read-only ------------------------------------------------------------------------------
def test_read_only_refuses_writes(factory):
    w = factory.new()
    w.set("a/b", b"1")
    r = factory.read_only(w)
    assert r.read_only
    assert r.get("a/b") == b"1"
    assert sorted(r.list()) == ["a/b"]
    calls = [
        lambda: r.set("a/b", b"2"),
        lambda: r.set("new", b"2"),
        lambda: r.erase("a/b"),
        lambda: r.erase_values(["a/b"]),
        lambda: r.erase_prefix(""),
        lambda: r.set_partial_values([("a/b", 0, b"2")]),
    ]
    for call in calls:
        with pytest.raises(ReadOnlyError) as exc:
            call()
        assert r.url in str(exc.value)
    assert r.get("a/b") == b"1"
    assert sorted(r.list()) == ["a/b"]


def test_store_from_url_read_only_view(factory):
    w = factory.new()
    w.set("k", b"v")
    if factory.kind == "zip":
        w.close()
        w = store_from_url(w.path, mode="r")
    r = store_from_url(w, mode="r")
    assert r.read_only and r.get("k") == b"v"
    with pytest.raises(ReadOnlyError):
        r.set("k", b"x")
    with pytest.raises(ReadOnlyError):
        store_from_url(r, mode="r+")


# -- bad keys -------------------------------------------------------------------------------
BAD_KEYS = [
    "",
    "/",
    "/abs",
    "/etc/passwd",
    "a/",
    "a//b",
    "//a",
    "..",
    ".",
    "../x",
    "a/../b",
    "a/..",
    "./a",
    "a/./b",
    "a/.",
    "a\x00b",
    "\x00",
    "../../../../../../tmp/escape",
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=[repr(k) for k in BAD_KEYS])
def test_bad_keys(store, key, tmp_path, outside, take_snapshot):
    snapshot = take_snapshot
    before = snapshot(tmp_path)
    for call in [
        lambda: store.get(key),
        lambda: store.get(key, RangeRequest(0, 1)),
        lambda: store.get_partial_values([(key, None)]),
        lambda: store.exists(key),
        lambda: store.set(key, b"x"),
        lambda: store.erase(key),
        lambda: store.erase_values([key]),
    ]:
        with pytest.raises(StoreError):
            call()
    if store.supports_partial_writes:
        with pytest.raises(StoreError):
            store.set_partial_values([(key, 0, b"x")])
    assert snapshot(tmp_path) == before  # nothing written anywhere, inside or outside
    assert list(store.list()) == []


@pytest.mark.parametrize("key", [None, 1, b"bytes", ("a",)])
def test_non_str_keys(store, key):
    with pytest.raises(StoreError):
        store.get(key)
    with pytest.raises(StoreError):
        store.set(key, b"x")


@pytest.mark.parametrize("prefix", ["/", "/a/", "a//", "../", "a/../", "./", "a\x00/"])
def test_bad_prefixes(store, prefix):
    with pytest.raises(StoreError):
        list(store.list_prefix(prefix))
    with pytest.raises(StoreError):
        store.list_dir(prefix)
    with pytest.raises(StoreError):
        store.erase_prefix(prefix)


# -- concurrency ----------------------------------------------------------------------------
def test_reader_sees_whole_values_only(store):
    """A reader racing a writer sees the full old or the full new value, never a mix."""
    import time

    n = 1 << 20
    values = [bytes([65 + i]) * n for i in range(3)]
    store.set("hot/key", values[0])
    stop = threading.Event()
    errors: list[str] = []
    writes = [0]
    seen: set[bytes] = set()

    def writer():
        i = 0
        while not stop.is_set():
            i += 1
            store.set("hot/key", values[i % 3])
            writes[0] = i

    def reader():
        reads, deadline = 0, time.monotonic() + 10
        while (reads < 60 or writes[0] < 5) and time.monotonic() < deadline:
            reads += 1
            v = store.get("hot/key")
            if v not in values:
                errors.append(f"torn read: len={None if v is None else len(v)}")
            else:
                seen.add(v[:1])
            p = store.get("hot/key", SuffixRequest(8))
            if p is None or len(set(p)) != 1:
                errors.append(f"bad suffix {p!r}")
        stop.set()

    t1, t2 = threading.Thread(target=writer), threading.Thread(target=reader)
    t1.start()
    t2.start()
    t2.join(30)
    stop.set()
    t1.join(30)
    assert not errors, errors[:3]
    assert writes[0] >= 5  # the race really happened
    assert store.get("hot/key") in values


def test_concurrent_disjoint_writers(store):
    nthreads, per = 4, 40

    def work(t):
        for i in range(per):
            store.set(f"t{t}/c/{i}", f"{t}-{i}".encode())

    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = {f"t{t}/c/{i}" for t in range(nthreads) for i in range(per)}
    assert set(store.list()) == expected
    for k in expected:
        t, _, i = k.split("/")
        assert store.get(k) == f"{t[1:]}-{i}".encode()


def test_concurrent_writers_same_directory(store):
    def work(t):
        for i in range(30):
            store.set(f"shared/{t}-{i}", b"x" * (i + 1))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.list_dir("shared/")) == 120


# -- identity, pickling, URLs ---------------------------------------------------------------
def test_pickle_round_trip(factory):
    s = factory.new()
    s.set("a/b", b"payload")
    if factory.kind == "zip":
        s.close()  # the central directory must be written before another process can read it
    s2 = pickle.loads(pickle.dumps(s))
    factory.opened.append(s2)
    assert type(s2) is type(s)
    assert s2.get("a/b") == b"payload"
    assert s2.url == s.url
    if factory.kind == "zip":
        assert s2.read_only and s2.mode == "r"
    else:
        assert s2.read_only == s.read_only


def test_pickle_read_only_stays_read_only(factory):
    w = factory.new()
    w.set("k", b"v")
    r = factory.read_only(w)
    r2 = pickle.loads(pickle.dumps(r))
    factory.opened.append(r2)
    assert r2.read_only and r2.get("k") == b"v"


def test_url_round_trip(factory):
    s = factory.new()
    s.set("k", b"v")
    if factory.kind == "zip":
        s.close()
    s2 = store_from_url(s.url, mode="r")
    factory.opened.append(s2)
    assert s2.get("k") == b"v"
    assert s2.url == s.url
    assert s2.read_only


def test_capability_flags(factory):
    s = factory.new()
    assert isinstance(s, Store)
    flags = {
        f: getattr(s, f)
        for f in ("supports_writes", "supports_deletes", "supports_partial_reads", "supports_partial_writes", "supports_listing")
    }
    expected = {
        "local-portable": dict(supports_writes=True, supports_deletes=True, supports_partial_reads=True, supports_partial_writes=True, supports_listing=True),
        "local": dict(supports_writes=True, supports_deletes=True, supports_partial_reads=True, supports_partial_writes=True, supports_listing=True),
        "memory": dict(supports_writes=True, supports_deletes=True, supports_partial_reads=True, supports_partial_writes=True, supports_listing=True),
        "zip": dict(supports_writes=True, supports_deletes=False, supports_partial_reads=True, supports_partial_writes=False, supports_listing=True),
    }[factory.kind]
    assert flags == expected
    r = factory.read_only(s)
    if factory.kind == "zip":
        assert r.supports_writes is False


def test_context_manager(factory):
    with factory.new() as s:
        s.set("k", b"v")
        assert s.get("k") == b"v"


# -- StorePath ------------------------------------------------------------------------------
def test_store_path(store):
    root = StorePath(store)
    arr = root / "group" / "arr"
    assert arr.path == "group/arr"
    chunk = arr / "c/0/0"
    assert chunk.path == "group/arr/c/0/0"
    assert chunk.get() is None and not chunk.exists()
    chunk.set(b"0123456789")
    assert chunk.get() == b"0123456789"
    assert chunk.get(SuffixRequest(3)) == b"789"
    assert chunk.get_ranges([RangeRequest(0, 2), SuffixRequest(1), None]) == [b"01", b"9", b"0123456789"]
    assert arr.list_dir() == ["c"]
    assert sorted(arr.list_prefix()) == ["group/arr/c/0/0"]
    assert StorePath(store, "/group/arr/") == arr
    assert chunk.supports_partial_writes == store.supports_partial_writes
    if store.supports_partial_writes:
        chunk.set_partial(10, b"AB")
        assert chunk.get() == b"0123456789AB"
    if store.supports_deletes:
        chunk.delete()
        assert chunk.get() is None


# -- model-based check ----------------------------------------------------------------------
_names = st.sampled_from(["0", "1", "zarr.json", "x y", "é"])
_keys = st.tuples(_names, _names).map("/".join)  # fixed depth: no file/directory clashes on disk
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _keys, st.binary(max_size=40)),
        st.tuples(st.just("erase"), _keys, st.none()),
        st.tuples(st.just("erase_prefix"), _names.map(lambda n: n + "/"), st.none()),
        st.tuples(st.just("partial"), _keys, st.tuples(st.integers(0, 50), st.binary(max_size=10))),
    ),
    max_size=25,
)


@pytest.mark.parametrize("kind", ["local", "memory", "zip"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, ranges=st.lists(st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(0, 60))), max_size=4))
def test_matches_dict_model(kind, tmp_path_factory, make_factory, ops, ranges):
    factory = make_factory(kind, tmp_path_factory.mktemp("model"))
    store = factory.new()
    model: dict[str, bytes] = {}
    try:
        for op, key, arg in ops:
            if op == "set":
                store.set(key, arg)
                model[key] = arg
            elif op == "erase" and store.supports_deletes:
                store.erase(key)
                model.pop(key, None)
            elif op == "erase_prefix" and store.supports_deletes:
                store.erase_prefix(key)
                for k in [k for k in model if k.startswith(key)]:
                    del model[k]
            elif op == "partial" and store.supports_partial_writes:
                start, data = arg
                store.set_partial_values([(key, start, data)])
                old = bytearray(model.get(key, b""))
                if len(old) < start + len(data):
                    old.extend(bytes(start + len(data) - len(old)))
                old[start : start + len(data)] = data
                model[key] = bytes(old)
        assert sorted(store.list()) == sorted(model)
        tops = sorted({k.split("/")[0] for k in model})
        assert store.list_dir("") == tops
        for k, v in model.items():
            assert store.get(k) == v
            for off, length in ranges:
                want = v[off:] if length is None else v[off : off + length]
                assert store.get(k, RangeRequest(off, length)) == want
                assert store.get(k, SuffixRequest(off)) == (v[-off:] if off else b"")
    finally:
        factory.close()


def test_concurrent_erase_and_write_same_directory(store):
    """Erasing the last key of a directory (which prunes it) must not break a concurrent writer."""
    if not store.supports_deletes:
        pytest.skip("append-only store")
    errors: list[BaseException] = []

    def writer(t):
        try:
            for i in range(150):
                store.set(f"d/e/{t}", b"v")
                store.erase(f"d/e/{t}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
    assert list(store.list()) == []
    assert store.list_dir("") == []


def test_snapshot_pins_one_version(store):
    """``snapshot(key)``: every store here pins the version it opened (issue 23.1: a
    sharded read takes its index and its inner chunks through one snapshot), also
    when the key is rewritten meanwhile by the same store object."""
    store.set("k", b"old-0123456789")
    if store.supports_conditional_reads:
        # object stores cannot pin: the version token does the same job (a read
        # conditional on it refuses another version); tests/reliability/test_http_versions.py
        data, token = store.get_versioned("k", SuffixRequest(4))
        assert data == b"6789" and token is not None
        assert store.get_ranges_if_version("k", [RangeRequest(0, 3)], token) == [b"old"]
        store.set("k", b"NEW-abcdefghij")
        assert store.get_ranges_if_version("k", [RangeRequest(0, 3)], token) is None
        return
    with store.snapshot("k") as snap:
        assert snap.pinned and snap.exists and snap.size == 14
        assert snap.get(RangeRequest(0, 3)) == b"old"
        store.set("k", b"NEW-abcdefghij")
        assert bytes(snap.get(RangeRequest(4, 4))) == b"0123"
        assert [bytes(v) for v in snap.get_ranges([SuffixRequest(2), RangeRequest(0, 3)])] == [b"89", b"old"]
        assert snap.get_ranges([]) == []
    assert store.get("k") == b"NEW-abcdefghij"
    with store.snapshot("missing") as snap:
        assert snap.exists is False and snap.get() is None
