"""Write sessions of object stores: a read-modify-write of one object that lands only if
nobody else wrote the object in between (issue 24.5; the README "Guarantees").

Object stores have no locks.  What S3, GCS and Azure offer instead is the conditional
PUT: ``If-Match: <ETag>`` (replace only that version) and ``If-None-Match: *`` (create
only if missing).  A writer's read-modify-write of a chunk or shard becomes:

1. ``ObjectStore.write_lock(key)`` opens a :class:`WriteSession` for ``key`` (the array
   layer holds it across the read-modify-write, as it holds LocalStore's file lock);
2. every response for ``key`` read meanwhile -- through any method, on any thread of
   the store's I/O pool -- is *noted*: its strong ETag, or :data:`ABSENT` (no object),
   or :data:`UNVALIDATED` (a response without a strong ETag);
3. the write is conditional on what was noted: ``If-Match`` the ETag, create-only after
   ABSENT, and a refusal after UNVALIDATED (nothing would prove the object unchanged).
   Two responses of different versions within one session, or a precondition the
   service reports failed, raise :class:`~zarrcy.errors.WriteConflictError`; the array
   layer then runs the whole read-modify-write again (bounded retries with backoff).

A session in which nothing was read (a complete chunk replaced) writes unconditionally:
the new value does not depend on the old one, so no update is lost -- the writes are
ordered.  Deletes cannot be conditional on the services' APIs as obstore exposes them:
an erase in a session first re-reads the object's ETag (HEAD) and deletes only when it
is still the version noted; a write landing between that HEAD and the DELETE (one round
trip) would be lost -- the one residual, avoided entirely with
``zarrcy.config(write_empty_chunks=True)`` (a chunk that becomes all fill is then stored,
conditionally, instead of erased).
"""

from __future__ import annotations

import threading
from typing import Any

from zarrcy.errors import StoreError, WriteConflictError

__all__ = ["ABSENT", "UNVALIDATED", "UNSEEN", "WriteSession", "Sessions", "put_mode"]


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: nothing was read of the object in this session
UNSEEN = _Marker("UNSEEN")
#: a read found no object
ABSENT = _Marker("ABSENT")
#: a response carried no strong ETag: a conditional write is impossible
UNVALIDATED = _Marker("UNVALIDATED")


class WriteSession:
    """What the reads of one object in one read-modify-write saw."""

    __slots__ = ("key", "token", "mixed")

    def __init__(self, key: str) -> None:
        self.key = key
        self.token: Any = UNSEEN
        #: two responses of different versions were seen
        self.mixed = False

    def note(self, token: Any) -> None:
        if self.token is UNSEEN:
            self.token = token
        elif self.token != token:
            self.mixed = True

    def wrote(self, token: Any) -> None:
        """After a successful write: later reads in the session must see this version."""
        self.token, self.mixed = token, False


class Sessions:
    """The open write sessions of one store, by key.  The array layer holds an
    in-process lock per object around each session, so one key has at most one session
    per process.  (No fork handling: an object store refuses every request in a process
    forked after its parent used one -- ``ObjectStore._store``.)"""

    __slots__ = ("_by_key", "_lock")

    def __init__(self) -> None:
        self._by_key: dict[str, WriteSession] = {}
        self._lock = threading.Lock()

    def active(self, key: str) -> WriteSession | None:
        return self._by_key.get(key) if self._by_key else None

    def note(self, key: str, token: Any) -> None:
        """Record a response for ``key`` (a no-op when no session is open: one dict test)."""
        s = self.active(key)
        if s is not None:
            s.note(token)

    def open(self, key: str) -> "_Open":
        return _Open(self, key)


class _Open:
    __slots__ = ("sessions", "session")

    def __init__(self, sessions: Sessions, key: str) -> None:
        self.sessions = sessions
        self.session = WriteSession(key)

    def __enter__(self) -> WriteSession:
        s = self.sessions
        with s._lock:
            s._by_key[self.session.key] = self.session
        return self.session

    def __exit__(self, *exc: Any) -> None:
        s = self.sessions
        with s._lock:
            if s._by_key.get(self.session.key) is self.session:
                del s._by_key[self.session.key]


def put_mode(session: WriteSession, url: str, what: str) -> Any:
    """The obstore put mode of a ``what`` ("write"/"delete") in ``session``: None
    (unconditional: nothing was read), ``"create"`` or ``{"e_tag": ...}``; raises
    WriteConflictError when the session saw two versions, StoreError when what it saw
    cannot be validated."""
    key, token = session.key, session.token
    if session.mixed:
        raise WriteConflictError(f"{url}/{key}: the object changed while it was read for a {what}")
    if token is UNSEEN:
        return None  # nothing was read: the new value does not depend on the old one
    if token is UNVALIDATED:
        raise StoreError(f"{url}/{key}: the server sent no strong ETag, so a {what} that depends on the "
                         "object's old value cannot be made conditional (another writer's update could be "
                         "lost); zarrcy.config(write_locks=False) writes anyway (one writer per chunk/shard)")
    return "create" if token is ABSENT else {"e_tag": token}
