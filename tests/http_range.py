"""Answering GET/HEAD with a value and single-range support, for the test HTTP servers
(tests/remote/conftest.py, tests/reliability/test_http_versions.py,
tests/reliability/test_ranged_index_object_store.py): the stdlib handler ignores
``Range``.  :func:`version_seen` judges a read made while the server swapped versions."""

from __future__ import annotations

import http.server


def send_empty(handler: http.server.BaseHTTPRequestHandler, code: int) -> None:
    handler.send_response(code)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def send_value(handler: http.server.BaseHTTPRequestHandler, data: bytes, body: bool, headers: dict[str, str]) -> None:
    """``data`` (or its ``Range: bytes=a-b`` / ``a-`` / ``-n`` part: 206, or 416 past the
    end) with ``headers``; the body only when ``body`` (GET, not HEAD)."""
    size = len(data)
    rng = handler.headers.get("Range")
    status, start, stop = 200, 0, size
    if rng and rng.startswith("bytes="):
        a, _, b = rng[6:].partition("-")
        if a == "":
            start, stop = max(0, size - int(b)), size
        else:
            start = int(a)
            stop = size if b == "" else min(size, int(b) + 1)
        if start >= size:
            handler.send_response(416)
            handler.send_header("Content-Range", f"bytes */{size}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        status = 206
    handler.send_response(status)
    handler.send_header("Content-Length", str(stop - start))
    for k, v in headers.items():
        handler.send_header(k, v)
    if status == 206:
        handler.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
    handler.end_headers()
    if body:
        handler.wfile.write(memoryview(data)[start:stop])  # (no copy: memory tests trace the server too)


def version_seen(got, old, new, what: str) -> str:
    """``"old"`` or ``"new"``: which version ``got`` (a read while the object was
    replaced) equals element for element; a mix of the two fails the test."""
    import numpy as np
    import pytest

    if np.array_equal(got, old):
        return "old"
    if np.array_equal(got, new):
        return "new"
    pytest.fail(f"{what}: a mix of versions: {got!r}")
