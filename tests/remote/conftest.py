"""Local servers for the remote-store tests: moto's S3 server and a plain HTTP server,
both bound to 127.0.0.1 (no other network), started once per session and stopped after.

moto runs behind :class:`RequestLog` (a WSGI middleware): ``s3_log`` gives each test the
requests the server really received (method, path, Range, If-Match, status), can run a
hook before each request (rewrite or delete an object between two GETs of one read) and
can strip or weaken the ETags of responses.

The ``factory``/``store`` fixtures mirror tests/storage/conftest.py so the shared store
suite runs unchanged against ``ObjectStore`` over S3 (each new store is a fresh prefix).
"""

from __future__ import annotations

import functools
import http.server
import itertools
import logging
import os
import threading
import urllib.request
from typing import Any

import pytest
from http_range import send_empty, send_value

BUCKET = "zarrcy-test"
_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


class RequestLog:
    """WSGI middleware in front of moto: every request as (method, path, Range, If-Match,
    status), plus response bytes -- counts what clients really send."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.entries: list[tuple[str, str, str | None, str | None, int]] = []
        self.bytes = 0
        #: optional hook(method, path, environ) called before each request (e.g. to
        #: rewrite or delete an object between two requests of one read)
        self.before: Any = None
        #: "strip": drop ETag headers from responses; "weak": send them as W/"..."
        self.etag_mode: str | None = None

    def reset(self) -> None:
        with self.lock:
            self.entries = []
            self.bytes = 0

    def requests(self, method: str | None = None, under: str = "") -> list[tuple]:
        with self.lock:
            return [e for e in self.entries if (method is None or e[0] == method) and under in e[1]]

    def __call__(self, environ, start_response):
        hook = self.before
        if hook is not None:
            hook(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ)
        status: list[int] = [0]
        mode = self.etag_mode

        def sr(st, headers, exc_info=None):
            status[0] = int(st.split()[0])
            if mode == "strip":
                headers = [(k, v) for k, v in headers if k.lower() != "etag"]
            elif mode == "weak":
                headers = [(k, "W/" + v if k.lower() == "etag" else v) for k, v in headers]
            return start_response(st, headers, exc_info) if exc_info else start_response(st, headers)

        body = self.app(environ, sr)
        # logged before the body is sent: a client that has its answer sees its request
        # in the log
        with self.lock:
            self.entries.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("HTTP_RANGE"),
                                 environ.get("HTTP_IF_MATCH"), status[0]))
        for chunk in body:
            with self.lock:
                self.bytes += len(chunk)
            yield chunk


class _CountingMoto:
    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.log = RequestLog(DomainDispatcherApplication(create_backend_app))
        self.server = make_server("127.0.0.1", 0, self.log, True, request_handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(5)


_SERVERS: list[_CountingMoto] = []


def _counting_moto() -> _CountingMoto:
    pytest.importorskip("moto.server")
    pytest.importorskip("obstore")
    srv = _CountingMoto()
    _SERVERS.append(srv)
    return srv


@pytest.fixture
def s3_log(s3_server) -> RequestLog:
    """The session S3 server's request log (reset for this test)."""
    log = _SERVERS[-1].log
    log.reset()
    log.before = None
    log.etag_mode = None
    yield log
    log.before = None
    log.etag_mode = None


@pytest.fixture(scope="session")
def s3_server():
    """``(endpoint, storage_options)`` of a moto S3 server with bucket ``BUCKET``.

    The AWS_* variables (dummy credentials, the local endpoint) are set for the session
    so that a bare ``s3://`` URL, as ``store_from_url``/pickling produce it, reaches
    the local server too."""
    server = _counting_moto()
    endpoint = server.endpoint
    old = {k: os.environ.get(k) for k in [*_ENV, "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]}
    os.environ.update(_ENV)
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    os.environ["AWS_ENDPOINT"] = endpoint
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")).close()
    opts = {"endpoint": endpoint, "region": "us-east-1", "access_key_id": "testing", "secret_access_key": "testing"}
    try:
        yield endpoint, opts
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_prefixes = itertools.count(1)


@pytest.fixture
def s3_url(s3_server, request):
    """A fresh, empty ``s3://`` prefix for one test."""
    return f"s3://{BUCKET}/t{next(_prefixes)}-{request.node.name[:40].replace('[', '-').replace(']', '')}"


class RemoteStoreFactory:
    """Makes writable ObjectStores on fresh prefixes and read-only views of them."""

    def __init__(self, kind: str, tmp_path, options: dict) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.options = options
        self.opened: list = []

    def new(self):
        from zarrcy.storage import ObjectStore

        s = ObjectStore(f"s3://{BUCKET}/suite{next(_prefixes)}", storage_options=self.options)
        self.opened.append(s)
        return s

    def read_only(self, store):
        from zarrcy.storage import ObjectStore

        s = ObjectStore(store.url, storage_options=self.options, read_only=True)
        self.opened.append(s)
        return s

    def close(self) -> None:
        for s in self.opened:
            s.close()


@pytest.fixture(params=["s3"])
def factory(request, tmp_path, s3_server):
    f = RemoteStoreFactory(request.param, tmp_path, s3_server[1])
    yield f
    f.close()


# -- plain HTTP ---------------------------------------------------------------------------------
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a directory with single-range ``Range: bytes=a-b`` / ``bytes=-n`` support
    (the stdlib handler ignores Range) and optional injected failures."""

    failures: dict = {}  # path -> list of status codes to return before serving normally
    log: list = []

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        type(self).log.append((self.command, self.path, self.headers.get("Range")))
        queue = self.failures.get(self.path)
        if queue:
            code = queue.pop(0)
            if code == "drop":  # announce a length, send half, hang up
                path = self.translate_path(self.path)
                with open(path, "rb") as fh:
                    data = fh.read()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            send_empty(self, 404)
            return
        with open(path, "rb") as fh:
            data = fh.read()
        mtime = os.path.getmtime(path)
        send_value(self, data, body, {"Last-Modified": self.date_time_string(int(mtime)),
                                      "ETag": f'"{len(data)}-{int(mtime * 1e6)}"'})


@pytest.fixture(scope="session")
def http_server(tmp_path_factory):
    """``(base_url, root_dir, handler_class)`` of a threaded HTTP server on 127.0.0.1."""
    root = tmp_path_factory.mktemp("http-root")
    handler = type("Handler", (_QuietHandler,), {"failures": {}, "log": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", root, handler
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)
