"""Deterministic failure injection for the crash-ordering tests (issue 23).

:class:`FaultyStore` wraps a real store and counts every *mutation* that reaches it, in
the order the code under test makes them: ``set``, ``set_spliced``, each
``(key, start, value)`` of ``set_partial_values``, ``truncate`` and each erased key
(``erase``, ``erase_values`` and ``erase_prefix`` are decomposed into one erase per key,
as LocalStore performs them: one ``unlink`` each).  From the mutation numbered
``die_at`` on (0-based), every mutation raises :class:`Killed` instead of reaching the
store, as if the process had been SIGKILLed just before it: what landed before stays,
nothing after it lands (also not from exception handlers, ``finally`` blocks or other
threads -- they all meet a dead store).

``Killed`` derives from ``BaseException`` so that no ``except Exception`` (nor the
conversion's ``except (OSError, ZarrcyError)``) can swallow it.

``die_at=None`` never dies: the wrapper then only counts (``ops``; ``log`` holds the
``(operation, key)`` pairs), which gives the number of kill points of a whole run.
``torn=True``: a killed ``set_partial_values`` first writes the first half of the
value (what a power loss can leave of an in-place write; an atomic ``set`` is never torn).

``fail_at=N`` instead makes only mutation N fail with ``OSError(ENOSPC)`` (a full disk,
an I/O error): the store stays alive, so the code's own recovery (e.g. undoing a failed
in-place append) runs and lands; with ``torn=True`` half of a failing partial write
lands first (a short write).
"""

from __future__ import annotations

import errno
import threading
from typing import Any, Iterable, Sequence

from zarrcy.storage import LocalStore, Store
from zarrcy.storage.wrapper import StoreWrapper

__all__ = ["FaultyStore", "Killed", "count_ops"]


class Killed(BaseException):
    """The simulated kill: raised by every mutation from ``die_at`` on."""


class FaultyStore(StoreWrapper):
    def __init__(self, inner: Store, die_at: int | None = None, *, fail_at: int | None = None,
                 torn: bool = False) -> None:
        super().__init__(inner)
        self.die_at = die_at
        self.fail_at = fail_at
        self.failed = False
        self.torn = torn
        self.ops = 0
        self.log: list[tuple[str, str]] = []
        self.dead = False
        self._lock = threading.Lock()

    # -- the kill ------------------------------------------------------------------------
    def _step(self, op: str, key: str) -> bool:
        """Count one mutation; True if it must not land (the store is dead, or this is
        the mutation that fails)."""
        with self._lock:
            if self.dead or (self.die_at is not None and self.ops >= self.die_at):
                self.dead = True
                return True
            n = self.ops
            self.ops += 1
            self.log.append((op, key))
            if n == self.fail_at:
                self.failed = True
                return True
            return False

    def _stop(self, what: str) -> BaseException:
        if self.dead:
            return Killed(f"killed before {what} (mutation {self.ops})")
        return OSError(errno.ENOSPC, f"injected failure of {what} (mutation {self.ops - 1})")

    def _mutate(self, op: str, key: str) -> None:
        if self._step(op, key):
            raise self._stop(f"{op} {key}")

    # -- mutations (counted) ---------------------------------------------------------------
    def set(self, key: str, value: Any) -> None:
        self._mutate("set", key)
        self.inner.set(key, value)

    def set_spliced(self, key: str, parts: Sequence[Any], source: Any = None) -> None:
        self._mutate("set_spliced", key)
        self.inner.set_spliced(key, parts, source)

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Any]]) -> None:
        for key, start, value in key_start_values:
            if self._step("set_partial", key):
                if self.torn:
                    mv = memoryview(value).cast("B")
                    self.inner.set_partial_values([(key, start, mv[: len(mv) // 2])])
                raise self._stop(f"set_partial {key}")
            self.inner.set_partial_values([(key, start, value)])

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        self._mutate("truncate", key)
        self.inner.truncate(key, length, identity)

    def erase(self, key: str) -> None:
        self._mutate("erase", key)
        self.inner.erase(key)

    def erase_values(self, keys: Iterable[str]) -> None:
        for k in list(keys):
            self.erase(k)

    def erase_prefix(self, prefix: str) -> None:
        for k in list(self.inner.list_prefix(prefix)):
            self.erase(k)
        if not self.dead:
            self.inner.erase_prefix(prefix)  # nothing left but (LocalStore) empty directories

    def remove_temp_files(self) -> int:
        self._mutate("remove_temp_files", "")
        return self.inner.remove_temp_files() if isinstance(self.inner, LocalStore) else 0

    def close(self) -> None:
        pass  # the wrapped store belongs to the test


def count_ops(run: Any, inner: Store) -> FaultyStore:
    """Run ``run(store)`` once on a counting (never dying) wrapper of ``inner``."""
    fs = FaultyStore(inner)
    run(fs)
    return fs
