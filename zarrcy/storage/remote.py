"""``ObjectStore``: S3, Google Cloud Storage, Azure Blob and HTTP(S) through obstore.

obstore (Python bindings of the Rust ``object_store`` crate) is the client: its calls
release the GIL, it retries transient failures (5xx, 429, connection resets, timeouts)
with exponential backoff.  ``get_partial_values`` merges nearby byte ranges of one
object into a few GETs and runs them concurrently -- what a sharded read needs (v3-core.rst "Abstract store
interface": ``get_partial_values``).

URLs: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``az://container/prefix`` (also
``abfs://``/``azure://``) and ``http(s)://host/path``.  ``storage_options`` are the
client's configuration keys (``endpoint``, ``region``, ``access_key_id``,
``secret_access_key``, ``skip_signature``, ...), plus ``client_options`` and
``retry_config`` dicts passed to obstore as is, and zarrcy's own ``max_concurrency``
(range GETs in flight at once, shared by all callers in the process; default 16),
``coalesce`` (merge ranges of one object closer than this many bytes; default 1 MiB)
and ``timeout`` (seconds, default 30: a server that does not connect, or sends no byte
of its answer, for that long fails the request, and retries of failed requests stop
that long after the first attempt -- a stalled server is reported after ~``timeout``
seconds as StoreError; ``client_options`` ``connect_timeout``/``read_timeout`` and
``retry_config`` ``retry_timeout`` given explicitly win).  HTTP(S) stores
are read-only and cannot list (plain web servers have no listing), so groups there
need consolidated metadata.

A store opened by URL alone (``store_from_url("s3://b/p")``, as unpickling an Array
does) reuses the ``storage_options`` an earlier store of the same URL was given in
this process; in another process it falls back to the client's environment
(``AWS_*``, ``GOOGLE_*``, ``AZURE_*`` variables, instance credentials).

Versions and conditional reads (``supports_conditional_reads``): ``get_versioned``
returns, with the bytes of one GET, a token naming the version they came from, and
``get_ranges_if_version(key, ranges, token)`` reads ranges of that version only (None
when the object is now another version).  The sharding codec reads a shard's index
with ``get_versioned`` and its inner chunks with ``get_ranges_if_version``, so what
"one version per read" rests on depends on what the server offers:

* **a strong ETag** (S3, GCS, Azure, most web servers): the token is the ETag and every
  data GET carries ``If-Match``: a changed object answers 412
  (``obstore.exceptions.PreconditionError``) instead of bytes the old index would
  misread.  The response's own ETag is compared too, so a server that ignores
  ``If-Match`` is caught as well.  A point read costs ONE request when the index is
  cached (the cache is keyed by the ETag; the server checks it with the data GET).
  Several ranges of one shard: one ``If-Match`` GET per coalesced range, concurrently.
* **no ETag, or a weak one** (``W/"..."``: nginx with gzip; Python's http.server sends
  none): nothing the server says proves two responses came from one version -- a
  ``Last-Modified`` has one-second resolution and can repeat (files copied with their
  times, reproducible archives), and the length of a rewritten shard is often the
  same.  The token is then the *content* it was read from (its byte range, the object
  size and a BLAKE2b digest of the bytes), and ``get_ranges_if_version`` fetches the
  requested ranges and the token's bytes in ONE GET (the span covering both), checking
  the size and the digest: the ranges come from the response that also holds index
  bytes identical to those the caller decoded, so an index is never applied to bytes
  of another version.  Cost: the span between the data and the index is transferred
  (a point read near the start of a shard whose index is at its end reads most of the
  shard); serve shards with strong ETags to read single ranges.  A span longer than
  ``SPAN_LIMIT`` (64 MiB) is not fetched whole: the ranges are, each response checked
  for the token's size and Last-Modified, and then the token's bytes are read again
  and compared -- a swap between the reads is seen; a swap and a swap back within one
  read keeping size, time and index bytes would not be (the one residual case).

``pinned_snapshot(key)`` (a large shard index read in pieces): the size and strong ETag
of one HEAD, then every read If-Match on it (``zarrcy.storage._etag_snapshot``).

Chosen over ``obstore.get_ranges`` plus a check because ``get_ranges`` returns no ETag
(the check would be another request, a HEAD, and still racy), whereas a conditional
GET, or one response holding index and data, is one version by construction.

Object stores replace an object whole on every PUT, so ``set`` is atomic for readers;
there are no partial writes.  Writers sharing an object (two writers' regions in one
chunk or shard) are ordered by conditional PUTs, not locks: ``write_lock(key)`` opens a
write session (``zarrcy.storage._conditional``) and the write lands only if the object
is still the version the session read (``If-Match`` / create-only), else
``WriteConflictError`` and the array layer retries the read-modify-write.  Errors: a missing object reads as ``None``; every other
failure (refused access, unreachable endpoint, retries exhausted, truncated body)
raises ``StoreError`` naming the URL of the object.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import operator
import os
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from zarrcy.config import get as _config_get, named_pool
from zarrcy.byte_range import ByteRequest, RangeRequest, SuffixRequest
from zarrcy.errors import ReadOnlyError, StoreError, WriteConflictError, expected
from zarrcy.storage import _conditional as CW
from zarrcy.storage._etag_snapshot import ETagSnapshot, strong_etag as _strong_etag
from zarrcy.storage._base import Buffer, Store
from zarrcy.storage._common import as_bytes_view, check_byte_request, check_key, check_prefix, resolve_range

__all__ = ["ObjectStore", "REMOTE_SCHEMES", "ContentVersion"]

REMOTE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "azure", "http", "https")
_READ_ONLY_SCHEMES = ("http", "https")
_DEFAULT_RETRY = {
    "max_retries": 5,
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=10), "base": 2},
}  # + retry_timeout: the store's ``timeout``
_DELETE_BATCH = 1000
_RUNTIME_PID: int | None = None  # the process whose requests started obstore's runtime
_OPTIONS_BY_URL: dict[str, dict[str, Any]] = {}  # S3 DeleteObjects takes at most 1000 keys per request


def _obstore() -> ModuleType:
    try:
        import obstore
        import obstore.store
    except ImportError:  # pragma: no cover - depends on the environment
        raise StoreError(
            "remote stores need the obstore package: pip install 'zarrcy[remote]'"
        ) from None
    return obstore


def _io_pool(n: int) -> ThreadPoolExecutor:
    """The process-wide pool of ``n`` threads for the GETs of ``get_partial_values``:
    ``max_concurrency`` bounds the requests in flight across all callers (shard tasks
    run in parallel); its tasks never wait on the pool."""
    return named_pool("io", n)


class _Changed(Exception):
    """Internal: a conditional read found another version of the object (or none)."""


class ContentVersion(NamedTuple):
    """The version token of a response without a strong ETag: the bytes
    ``[start, stop)`` it held (their BLAKE2b-128 digest) in an object of ``size`` bytes.
    ``get_ranges_if_version`` re-reads those bytes in the same GET as the requested
    ranges and compares (see the module docstring)."""

    start: int
    stop: int
    size: int
    digest: bytes
    #: the response's Last-Modified (not a validator alone: see the module docstring)
    modified: Any = None


#: a conditional read on a ContentVersion fetches the ranges and the token's bytes in
#: one GET when the span covering them is at most this long; a longer span (a point
#: read near the start of a big shard whose index is at its end) is fetched as ranges,
#: each response checked for the token's size and Last-Modified, and then the token's
#: bytes are read again and compared (a hostile or huge object never makes one read
#: allocate more than this plus the ranges asked for)
SPAN_LIMIT = 64 << 20


def _digest(data: Any) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class _Got(NamedTuple):
    """One GET's answer: bytes (None: missing), the strong ETag (or None), the offset of
    the first byte within the object, and the object's size (None: unknown)."""

    data: bytes | None
    etag: str | None
    start: int
    size: int | None
    modified: Any = None


_CONTROL = (KeyboardInterrupt, SystemExit, GeneratorExit)


def _timed_out(exc: BaseException) -> bool:
    """Whether a client error is a timeout (obstore reports reqwest's ``TimedOut`` in
    the error text only)."""
    return "TimedOut" in str(exc)


def _reraise_control(exc: BaseException) -> None:
    """Client calls catch BaseException -- obstore (Rust, pyo3) reports panics as
    ``pyo3_runtime.PanicException``, a BaseException that ``except Exception`` misses --
    but never swallow Ctrl-C, interpreter exit or a closing generator."""
    if isinstance(exc, _CONTROL):
        raise exc


# -- storage_options ---------------------------------------------------------------------------
# The client's configuration keys (obstore 0.12: S3Config, GCSConfig, AzureConfig and
# ClientConfig), checked before the client is built: an unknown key used to reach the
# Rust client, and a client option at the top level (``allow_http``) made it panic.
# Keys match case-insensitively, with or without the service prefix (``aws_``, ``google_``,
# ``azure_``), as the client reads them.
_ZARRCY_KEYS = ("max_concurrency", "coalesce", "timeout")
#: seconds a request may wait for the server (to connect, or between two reads of the
#: answer) and for its retries, unless ``storage_options["timeout"]`` says otherwise
DEFAULT_TIMEOUT = 30.0
_NESTED_KEYS = ("client_options", "retry_config", "credential_provider", "config")
_CLIENT_KEYS = frozenset((
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "default_headers",
    "http1_only", "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle",
    "http2_only", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate",
    "proxy_excludes", "root_certificate", "randomize_addresses", "read_timeout", "timeout", "user_agent",
))
_RETRY_KEYS = frozenset(("max_retries", "backoff", "retry_timeout"))
_SERVICE_KEYS: dict[str, tuple[str, frozenset[str]]] = {
    "s3": ("aws_", frozenset((
        "access_key_id", "secret_access_key", "session_token", "token", "region", "default_region", "bucket",
        "bucket_name", "endpoint", "endpoint_url", "checksum_algorithm", "conditional_put",
        "container_credentials_relative_uri", "container_credentials_full_uri",
        "container_authorization_token_file", "copy_if_not_exists", "disable_tagging", "disable_bulk_delete",
        "imdsv1_fallback", "metadata_endpoint", "request_payer", "role_arn", "role_session_name", "s3_express",
        "server_side_encryption", "skip_signature", "sse_bucket_key_enabled", "sse_customer_key_base64",
        "sse_kms_key_id", "unsigned_payload", "virtual_hosted_style_request", "web_identity_token_file",
    ))),
    "gcs": ("google_", frozenset((
        "service_account", "service_account_path", "service_account_key", "application_credentials", "base_url",
        "bearer_token", "bucket", "bucket_name", "skip_signature",
    ))),
    "azure": ("azure_", frozenset((
        "account_name", "account_key", "access_key", "client_id", "client_secret", "credential_type", "tenant_id",
        "authority_host", "sas_key", "sas_token", "token", "use_emulator", "use_fabric_endpoint", "encryption_key",
        "endpoint", "msi_endpoint", "object_id", "msi_resource_id", "federated_token_file", "use_azure_cli",
        "skip_signature", "container_name", "disable_tagging", "fabric_token_service_url", "fabric_workload_host",
        "fabric_session_token", "fabric_cluster_identifier",
    ))),
}
_FAMILY = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure",
           "azure": "azure", "http": "http", "https": "http"}


def _valid_keys_text(family: str) -> str:
    service = sorted(_SERVICE_KEYS[family][1]) if family in _SERVICE_KEYS else []
    nested = ["client_options", "retry_config"] + (["credential_provider", "config"] if service else [])
    return ", ".join([*service, *nested, *_ZARRCY_KEYS])


def check_storage_options(scheme: str, options: dict[str, Any]) -> None:
    """StoreError for a storage option the client would refuse (or panic on), naming the
    key and listing the valid ones; see the tables above."""
    family = _FAMILY[scheme]
    for k, v in options.items():
        if type(k) is not str:
            raise StoreError(expected("storage_options", "string keys", k))
        if k in _ZARRCY_KEYS or (k in _NESTED_KEYS and (family != "http" or k in ("client_options", "retry_config"))):
            continue
        low = k.lower()
        prefix, service = _SERVICE_KEYS.get(family, ("", frozenset()))
        short = low[len(prefix):] if prefix and low.startswith(prefix) else low
        if short in _CLIENT_KEYS or low in _CLIENT_KEYS:
            raise StoreError(
                f"storage_options.{k}: expected a configuration key of {scheme}:// stores, received {k!r}, which is an "
                f"HTTP client option: pass it as storage_options={{'client_options': {{{k!r}: ...}}}} "
                f"(valid keys: {_valid_keys_text(family)})"
            )
        if family == "azure" and low.startswith("azure_"):
            continue  # the long azure_storage_* spellings are many: the client checks those
        if short not in service:
            raise StoreError(expected(f"storage_options.{k}", f"one of {_valid_keys_text(family)}", k))
    timeout = options.get("timeout", DEFAULT_TIMEOUT)
    if type(timeout) not in (int, float) or not 0 < timeout < 1e6:
        raise StoreError(expected("storage_options.timeout", "seconds, a number > 0", timeout))
    for name, valid in (("client_options", _CLIENT_KEYS), ("retry_config", _RETRY_KEYS)):
        sub = options.get(name)
        if sub is None:
            continue
        if not isinstance(sub, dict):
            raise StoreError(expected(f"storage_options.{name}", "a dict", sub))
        for k in sub:
            if type(k) is not str or k.lower() not in valid:
                raise StoreError(expected(f"storage_options.{name}.{k}", f"one of {', '.join(sorted(valid))}", k))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ObjectStore(Store):
    """``ObjectStore(url, storage_options=None, read_only=False)``: an object store bucket or prefix."""

    supports_writes = True
    supports_deletes = True
    supports_partial_reads = True
    supports_partial_writes = False
    supports_listing = True
    supports_conditional_reads = True
    #: writes in a ``write_lock`` session are conditional PUTs (If-Match / If-None-Match)
    supports_conditional_writes = True

    def __init__(self, url: str, *, storage_options: dict[str, Any] | None = None, read_only: bool = False) -> None:
        if type(url) is not str or "://" not in url:
            raise StoreError(expected("url", "a URL such as s3://bucket/prefix", url))
        scheme = url.partition("://")[0].lower()
        if scheme not in REMOTE_SCHEMES:
            raise StoreError(expected("url", f"a URL with one of the schemes {REMOTE_SCHEMES}", url))
        self._url = url.rstrip("/")
        self.scheme = scheme
        if storage_options is None:
            # arrays and groups pickle as (store URL, path): reopening by URL in this
            # process finds the options the store was first opened with
            storage_options = _OPTIONS_BY_URL.get(self._url)
        elif storage_options:
            if not isinstance(storage_options, dict):
                raise StoreError(expected("storage_options", "a dict", storage_options))
            check_storage_options(scheme, storage_options)  # before they are remembered for the URL
            _OPTIONS_BY_URL[self._url] = dict(storage_options)
        self.storage_options = dict(storage_options or {})
        if scheme in _READ_ONLY_SCHEMES:
            read_only = True
            self.supports_writes = False
            self.supports_deletes = False
            self.supports_listing = False
        super().__init__(read_only=read_only)
        self._sessions = CW.Sessions()
        check_storage_options(scheme, self.storage_options)
        opts = dict(self.storage_options)
        try:
            self.max_concurrency = operator.index(opts.pop("max_concurrency", 16))
            self.coalesce = operator.index(opts.pop("coalesce", 1 << 20))
        except TypeError:
            raise StoreError(expected("storage_options", "integers for max_concurrency and coalesce",
                                      {k: self.storage_options.get(k) for k in _ZARRCY_KEYS})) from None
        if self.max_concurrency < 1:
            raise StoreError(expected("storage_options.max_concurrency", "an int >= 1", self.max_concurrency))
        self.io_concurrency = self.max_concurrency
        self.timeout = float(opts.pop("timeout", DEFAULT_TIMEOUT))  # checked by check_storage_options
        wait = timedelta(seconds=self.timeout)
        opts["retry_config"] = {**_DEFAULT_RETRY, "retry_timeout": wait, **(opts.get("retry_config") or {})}
        client_options = dict(opts.pop("client_options", None) or {})
        # a stalled server: no connection, or no byte of the answer, within ``timeout``
        # (read_timeout restarts with every read, so long transfers are not cut)
        client_options.setdefault("connect_timeout", wait)
        client_options.setdefault("read_timeout", wait)
        endpoint = next((str(v) for k, v in opts.items()
                         if k.lower().removeprefix("aws_") in ("endpoint", "endpoint_url")), "")
        if endpoint.startswith("http://") or scheme == "http":
            client_options.setdefault("allow_http", True)  # a plain-HTTP endpoint was asked for explicitly
        if client_options:
            opts["client_options"] = client_options
        ob = _obstore()
        try:
            client_url = "gs://" + self._url.partition("://")[2] if scheme == "gcs" else self._url
            self._client = ob.store.from_url(client_url, **opts)
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            hint = ""
            if type(e).__name__ == "UnknownConfigurationKeyError":
                hint = f" (valid storage_options keys: {_valid_keys_text(_FAMILY[scheme])})"
            raise StoreError(f"{self._url}: cannot configure the object store: {_first_line(e)}{hint}") from e
        self._ob = ob

    @property
    def _store(self) -> Any:
        """The client.  obstore's I/O runtime is not fork-safe (its worker threads do not
        exist in a forked child, so a request there never completes): a process forked
        after this one made a request refuses with StoreError instead of hanging."""
        global _RUNTIME_PID
        pid = os.getpid()
        if _RUNTIME_PID != pid:
            if _RUNTIME_PID is not None:
                raise StoreError(
                    f"{self._url}: object stores cannot be used in a process forked after its parent "
                    "used one (obstore's I/O runtime does not survive fork); start workers with the "
                    "'spawn' or 'forkserver' multiprocessing method (Dask: processes=False or a "
                    "distributed cluster), or open object stores only after forking"
                )
            _RUNTIME_PID = pid
        return self._client

    # -- identity ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self._url

    def __repr__(self) -> str:
        return f"ObjectStore({self._url!r}{', read_only' if self.read_only else ''})"

    def __reduce__(self) -> tuple[Callable[[str, dict, bool], ObjectStore], tuple[str, dict, bool]]:
        return (_reopen, (self._url, self.storage_options, self.read_only))

    def with_read_only(self, read_only: bool = True) -> "ObjectStore":
        if read_only == self.read_only:
            return self
        if not read_only and self.scheme in _READ_ONLY_SCHEMES:
            raise ReadOnlyError(f"{self._url}: HTTP(S) stores are read-only")
        view = ObjectStore.__new__(ObjectStore)
        view.__dict__.update(self.__dict__)
        view.read_only = read_only
        return view

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ObjectStore)
            and other._url == self._url
            and other.storage_options == self.storage_options
            and other.read_only == self.read_only
        )

    def __hash__(self) -> int:
        return hash(self._url)

    # -- errors --------------------------------------------------------------------------
    def _error(self, key: str, exc: BaseException, what: str = "") -> StoreError:
        ex = getattr(self._ob, "exceptions", None)
        where = f"{self._url}/{key}" if key else self._url
        if ex is not None and isinstance(exc, (ex.PermissionDeniedError, ex.UnauthenticatedError)):
            return StoreError(f"{where}: access denied{what}: {_first_line(exc)}")
        if _timed_out(exc):
            return StoreError(f"{where}: request timed out{what}: no answer within timeout={self.timeout:g} s "
                              f"(storage_options['timeout']): {_first_line(exc)}")
        return StoreError(f"{where}: request failed{what}: {_first_line(exc)}")

    def _is_missing(self, exc: BaseException) -> bool:
        return isinstance(exc, (FileNotFoundError, self._ob.exceptions.NotFoundError))

    def _head(self, key: str) -> dict | None:
        """The object's metadata (size, e_tag, ...); None if it does not exist."""
        try:
            meta = self._ob.head(self._store, key)
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            if self._is_missing(e):
                self._sessions.note(key, CW.ABSENT)
                return None
            raise self._error(key, e) from e
        self._sessions.note(key, _strong_etag(meta) or CW.UNVALIDATED)
        return meta

    def _size(self, key: str) -> int | None:
        meta = self._head(key)
        return None if meta is None else int(meta["size"])

    # -- reads ---------------------------------------------------------------------------
    def _fetch(self, key: str, byte_range: ByteRequest, if_match: str | None = None) -> _Got:
        """One GET: the bytes (None if missing), the strong ETag of the version read (or
        None), where the bytes start in the object and its size.

        With ``if_match`` the bytes must come from that version: a 412, a missing
        object, or a response whose own ETag differs (a server that ignores
        ``If-Match``) raise :class:`_Changed` instead of returning bytes."""
        options: dict[str, Any] = {}
        if if_match is not None:
            options["if_match"] = if_match
        empty = False
        if byte_range is not None:
            if isinstance(byte_range, SuffixRequest):
                empty = byte_range.length == 0
                options["range"] = {"suffix": int(byte_range.length)}
            else:
                off, length = int(byte_range.offset), byte_range.length
                empty = length == 0
                options["range"] = {"offset": off} if length is None else (off, off + int(length))
        if empty:  # no bytes to transfer: the object's existence (and version) is the answer
            got = self._head_check(key, if_match, byte_range)
            assert got is not None  # an empty range holds no bytes
            return got
        try:
            result = self._ob.get(self._store, key, options=options or None)
            data = bytes(result.bytes())
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            if isinstance(e, self._ob.exceptions.PreconditionError):
                raise _Changed(key) from None
            if self._is_missing(e):
                if if_match is not None:
                    raise _Changed(key) from None
                self._sessions.note(key, CW.ABSENT)
                return _Got(None, None, 0, None)
            if byte_range is not None and not _timed_out(e):
                # 416: the range starts at or past the end; clipped to empty (byte_range.resolve)
                got = self._head_check(key, if_match, byte_range)
                if got is not None:
                    return got
            raise self._error(key, e) from e
        meta = getattr(result, "meta", None) or {}
        etag = _strong_etag(meta)
        self._sessions.note(key, etag or CW.UNVALIDATED)
        if if_match is not None and etag != if_match:
            raise _Changed(key)  # the server ignored If-Match and sent another version
        size = meta.get("size")
        size = size if type(size) is int else None
        if byte_range is None:
            if size is not None and len(data) != size:  # a body cut short
                raise StoreError(f"{self._url}/{key}: truncated object: {len(data)} of {size} bytes")
            return _Got(data, etag, 0, len(data), meta.get("last_modified"))
        rng = getattr(result, "range", None)
        start = int(rng[0]) if rng is not None else (resolve_range(byte_range, size)[0] if size is not None else 0)
        return _Got(data, etag, start, size, meta.get("last_modified"))

    def _head_check(self, key: str, if_match: str | None, byte_range: ByteRequest) -> _Got | None:
        """A HEAD standing in for a GET of no bytes (an empty range, or one past the end):
        data ``b""`` when the range holds no bytes of the object as it is now, data None
        if the object is missing; None when the range does hold bytes (so the GET
        failed for another reason)."""
        meta = self._head(key)
        if meta is None:
            if if_match is not None:
                raise _Changed(key)
            return _Got(None, None, 0, None)
        etag = _strong_etag(meta)
        if if_match is not None and etag != if_match:
            raise _Changed(key)
        size = int(meta["size"])
        start, stop = resolve_range(byte_range, size)
        return _Got(b"", etag, start, size, meta.get("last_modified")) if start >= stop else None

    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        check_key(key)
        check_byte_request(byte_range)
        return self._fetch(key, byte_range).data

    def get_versioned(self, key: str, byte_range: ByteRequest = None) -> tuple[bytes | None, object | None]:
        """``(bytes, version token)`` from one GET: the strong ETag, or, from a server
        without one (none, or a weak ``W/...``: If-Match never matches those), a
        :class:`ContentVersion` of the bytes returned.  ``(None, None)`` if missing."""
        check_key(key)
        check_byte_request(byte_range)
        got = self._fetch(key, byte_range)
        if got.data is None or got.etag is not None:
            return got.data, got.etag
        if got.size is None:  # nothing to validate with (no object size either)
            return got.data, None
        return got.data, ContentVersion(got.start, got.start + len(got.data), got.size, _digest(got.data), got.modified)

    def pinned_snapshot(self, key: str) -> ETagSnapshot:
        return ETagSnapshot.of_head(self, key, self._head(check_key(key)))

    def get_ranges_if_version(
        self, key: str, byte_ranges: Sequence[ByteRequest], version: object
    ) -> list[bytes | None] | None:
        """Ranges of ``key`` as of ``version`` (from ``get_versioned``); ``None`` if the
        object is now another version or missing.  An ETag: one ``If-Match`` GET per
        coalesced range, run concurrently, each refused (412, another ETag in the
        response) when the object changed.  A :class:`ContentVersion`: ONE GET of the
        span covering the ranges and the token's bytes, whose size and digest must match."""
        check_key(key)
        if isinstance(version, ContentVersion):
            return self._get_span_if_content(key, byte_ranges, version)
        if not isinstance(version, str) or not version:
            raise StoreError(expected(f"{self._url}/{key}: version", "an ETag string or a ContentVersion", version))
        try:
            return self._get_many([(key, r) for r in byte_ranges], version)
        except _Changed:
            return None

    def _get_span_if_content(
        self, key: str, byte_ranges: Sequence[ByteRequest], version: ContentVersion
    ) -> list[bytes | None] | None:
        size = version.size
        spans = [resolve_range(r, size) for r in byte_ranges]
        lo, hi = (version.start, version.stop) if version.stop > version.start else (size, 0)
        for a, b in spans:
            if b > a:
                lo, hi = min(lo, a), max(hi, b)
        if hi - lo > SPAN_LIMIT:
            return self._get_ranges_rechecked(key, spans, version)
        if hi > lo:
            got = self._fetch(key, RangeRequest(lo, hi - lo))
            data = got.data
            if data is None or got.size != size or got.start != lo or len(data) != hi - lo:
                return None
            if _digest(memoryview(data)[version.start - lo : version.stop - lo]) != version.digest:
                return None
        else:  # nothing to read and a token of no bytes: the size is the version
            meta = self._head(key)
            if meta is None or int(meta["size"]) != size:
                return None
            data = b""
        return [data[a - lo : b - lo] if b > a else b"" for a, b in spans]

    def _get_ranges_rechecked(
        self, key: str, spans: list[tuple[int, int]], version: ContentVersion
    ) -> list[bytes | None] | None:
        """The ranges (coalesced, concurrent), every response from an object of the
        token's size and Last-Modified, then the token's bytes read again and compared:
        an index swapped between the index read and the data read is seen (its bytes, or
        the size, or the time differ).  Not seen: a swap and a swap back within one read
        that keep size, time and index bytes (see SPAN_LIMIT)."""
        wanted = [(key, RangeRequest(a, b - a)) for a, b in spans if b > a]
        try:
            got = iter(self._get_many(wanted, None, (version.size, version.modified)))
        except _Changed:
            return None
        out = [next(got) if b > a else b"" for a, b in spans]
        again = self._fetch(key, RangeRequest(version.start, version.stop - version.start))
        if (again.data is None or again.size != version.size or again.modified != version.modified
                or _digest(again.data) != version.digest or any(v is None for v in out)):
            return None
        return out

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Bounded ranges of one key are sorted and merged when the gap between them is at
        most ``coalesce`` bytes (storage_options, default 1 MiB), so a shard's needed inner
        chunks cost a few GETs; all fetches run on up to ``max_concurrency`` threads
        (obstore releases the GIL).  Ranges are fetched with single-range GETs rather than
        ``obstore.get_ranges``, which panics when a range runs past the end of the object
        (possible with a corrupt shard index) instead of clipping it."""
        return self._get_many(key_ranges, None)

    def _get_many(self, key_ranges: Sequence[tuple[str, ByteRequest]], if_match: str | None,
                  expect: tuple[int, Any] | None = None) -> list[bytes | None]:
        """``expect``: (size, Last-Modified) every response must report, else _Changed."""
        bounded: dict[str, list[tuple[int, int, int]]] = {}
        fetches: list[tuple[str, ByteRequest, list[tuple[int, int, int]]]] = []
        empty: list[tuple[str, int]] = []
        for i, (k, r) in enumerate(key_ranges):
            check_key(k)
            check_byte_request(r)
            if isinstance(r, RangeRequest) and r.length:
                bounded.setdefault(k, []).append((int(r.offset), int(r.offset) + int(r.length), i))
            elif if_match is not None and isinstance(r, RangeRequest) and r.length == 0:
                empty.append((k, i))  # answered by the other ranges' version check below
            else:
                fetches.append((k, r, [(0, 0, i)]))
        for k, items in bounded.items():
            items.sort()
            group = [items[0]]
            stop = items[0][1]
            for it in items[1:]:
                if it[0] - stop <= self.coalesce:
                    group.append(it)
                    stop = max(stop, it[1])
                else:
                    fetches.append((k, RangeRequest(group[0][0], stop - group[0][0]), group))
                    group, stop = [it], it[1]
            fetches.append((k, RangeRequest(group[0][0], stop - group[0][0]), group))
        if empty and not fetches:  # only empty ranges: one conditional HEAD checks the version
            fetches.append((empty[0][0], RangeRequest(0, 0), [(0, 0, empty[0][1])]))
        out: list[bytes | None] = [None] * len(key_ranges)

        def one(fetch: tuple[str, ByteRequest, list[tuple[int, int, int]]]) -> None:
            key, req, parts = fetch
            got = self._fetch(key, req, if_match)
            if expect is not None and (got.data is None or (got.size, got.modified) != expect):
                raise _Changed(key)
            data = got.data
            if not isinstance(req, RangeRequest) or not req.length:
                out[parts[0][2]] = data
                return
            base = req.offset
            for start, stop, i in parts:
                out[i] = None if data is None else data[start - base : stop - base]

        if len(fetches) <= 1 or self.max_concurrency == 1:
            for f in fetches:
                one(f)
        else:
            # the caller runs the first fetch itself; the rest go to the shared I/O pool
            pool = _io_pool(self.max_concurrency)
            futures = [pool.submit(one, f) for f in fetches[1:]]
            try:
                one(fetches[0])
                for fut in futures:
                    fut.result()
            finally:
                for fut in futures:
                    fut.cancel()
        for _k, i in empty:
            out[i] = b""
        return out

    def exists(self, key: str) -> bool:
        check_key(key)
        return self._size(key) is not None

    def getsize(self, key: str) -> int | None:
        return self._size(check_key(key))

    # -- writes --------------------------------------------------------------------------
    def write_lock(self, key: str) -> Any:
        """``Store.write_lock``: a write session -- the object's writes in it are
        conditional on the version its reads saw (module docstring of
        ``zarrcy.storage._conditional``); nothing when ``zarrcy.config(write_locks=False)``."""
        if not _config_get("write_locks"):
            return contextlib.nullcontext()
        return self._sessions.open(check_key(key))

    def in_write_session(self, key: str) -> bool:
        return self._sessions.active(key) is not None

    def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        check_key(key)
        data = bytes(as_bytes_view(value))
        session = self._sessions.active(key)
        mode: Any = None
        if session is not None:
            mode = CW.put_mode(session, self._url, "write")
        try:
            # one PUT: readers see the old or the new object
            result = self._ob.put(self._store, key, data, mode=mode) if mode else self._ob.put(self._store, key, data)
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            ex = self._ob.exceptions
            if mode is not None and isinstance(e, (ex.PreconditionError, ex.AlreadyExistsError)):
                raise WriteConflictError(f"{self._url}/{key}: another writer changed the object since it was read "
                                         "(the conditional write was refused)") from None
            if mode is not None and isinstance(e, ex.NotSupportedError):
                raise StoreError(f"{self._url}/{key}: the service refuses conditional writes ({_first_line(e)}); "
                                 "writers sharing chunks or shards need them -- zarrcy.config(write_locks=False) "
                                 "writes unconditionally (one writer per chunk/shard)") from e
            raise self._error(key, e, " (write)") from e
        if session is not None:
            session.wrote(_strong_etag(result) or CW.UNVALIDATED)

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        self._check_writable()
        raise StoreError(f"{self._url}: object stores do not support partial writes")

    def erase(self, key: str) -> None:
        self._check_writable()
        check_key(key)
        session = self._sessions.active(key)
        if session is not None and CW.put_mode(session, self._url, "delete") is not None:
            # deletes cannot be conditional here: delete only if still the version read
            # (a write between this HEAD and the DELETE is the documented residual)
            seen = session.token
            meta = self._head(key)
            now = CW.ABSENT if meta is None else (_strong_etag(meta) or CW.UNVALIDATED)
            if now != seen:
                raise WriteConflictError(f"{self._url}/{key}: another writer changed the object since it was read "
                                         "(not deleted)")
            if meta is None:
                return
            self._delete([key])
            session.wrote(CW.ABSENT)
            return
        self._delete([key])

    def erase_values(self, keys: Iterable[str]) -> None:
        self._check_writable()
        self._delete([check_key(k) for k in keys])

    def _delete(self, keys: list[str]) -> None:
        for i in range(0, len(keys), _DELETE_BATCH):
            batch = keys[i : i + _DELETE_BATCH]
            try:
                self._ob.delete(self._store, batch if len(batch) > 1 else batch[0])
            except BaseException as e:  # pyo3's PanicException is a BaseException
                _reraise_control(e)
                if self._is_missing(e):
                    continue
                raise self._error(batch[0], e, " (delete)") from e

    def erase_prefix(self, prefix: str) -> None:
        self._check_writable()
        check_prefix(prefix)
        self._delete(list(self.list_prefix(prefix)))

    # -- listing -------------------------------------------------------------------------
    def _check_listing(self) -> None:
        if not self.supports_listing:
            raise StoreError(f"{self._url}: {self.scheme}:// stores cannot list keys (use consolidated metadata)")

    def _list(self, prefix: str | None) -> Iterator[str]:
        self._check_listing()
        try:
            for batch in self._ob.list(self._store, prefix):
                for meta in batch:
                    yield meta["path"]
        except StoreError:
            raise
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            raise self._error(prefix or "", e, " (list)") from e

    def list(self) -> Iterator[str]:
        return self._list(None)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        check_prefix(prefix)
        if prefix == "":
            return self._list(None)
        # object_store prefixes match whole path segments; zarrcy's are plain string prefixes
        head, sep, _ = prefix.rpartition("/")
        parent = head if sep else None
        return (k for k in self._list(parent) if k.startswith(prefix))

    def list_dir(self, prefix: str) -> builtins.list[str]:
        check_prefix(prefix)
        self._check_listing()
        base = prefix.rstrip("/")
        try:
            res = self._ob.list_with_delimiter(self._store, base or None)
        except BaseException as e:  # pyo3's PanicException is a BaseException
            _reraise_control(e)
            raise self._error(base, e, " (list)") from e
        strip = len(base) + 1 if base else 0
        names = {p[strip:] for p in res["common_prefixes"]}
        names.update(m["path"][strip:] for m in res["objects"])
        names.discard("")
        return sorted(names)


def _reopen(url: str, storage_options: dict, read_only: bool) -> ObjectStore:
    return ObjectStore(url, storage_options=storage_options, read_only=read_only)
