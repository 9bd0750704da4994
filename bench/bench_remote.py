"""Remote workload over a local S3 server (moto, 127.0.0.1): the sharded array of
bench/bench_sharding.py -- uint16 (512, 512, 512), shards 256^3, inner chunks 32^3,
bytes + gzip(1), index bytes + crc32c at the end -- read whole, by 1000 random points
and by 200 random unaligned 40^3 boxes, by zarrcy (``ObjectStore`` over obstore),
zarr-python 3 (``zarr.storage.ObjectStore`` over obstore's ``S3Store``) and
tensorstore's ``s3`` kvstore driver, all against the same server and the same object.

Counting: moto runs in a *child process* (its own GIL: the server's Python work does
not slow the readers down, nor the other way round) behind a WSGI middleware that
counts every request and every response byte it sends; the bench reads and resets the
counters through a control path the middleware answers itself (not counted).  So the
three readers are counted the same way, at the server.  Each operation runs once per
reader with the counters reset before it (the full read runs ``repeat`` times for the
median time; its counts are from the first run).  zarrcy's shard-index cache is
cleared before every operation: counts are for a cold reader (1000 points over 8
shards: 1000 + 8 requests).  zarr-python and tensorstore run with their defaults (no
cache pool for tensorstore).  Loopback has no network latency, so times mostly measure
per-request overhead (client and moto, ~10 ms per request here); the request counts
are the result that transfers to a real object store.

``--quick``: (128,)^3, shards 64^3, inner 16^3, 100 points, 20 unaligned 20^3 boxes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

from bench.common import Table

BUCKET = "bench"
_CONTROL = "/__bench_counter__"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the server (child process) ---------------------------------------------------------------
class _Counter:
    """Counts requests and response bytes; ``GET _CONTROL`` returns them as JSON,
    ``DELETE _CONTROL`` resets them (neither is counted)."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.by_method: dict[str, int] = {}

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == _CONTROL:
            with self.lock:
                body = json.dumps({"requests": self.requests, "bytes": self.bytes, "by_method": self.by_method}).encode()
                if environ["REQUEST_METHOD"] == "DELETE":
                    self.requests = self.bytes = 0
                    self.by_method = {}
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        with self.lock:  # counted on arrival: a client that has its answer is counted
            self.requests += 1
            m = environ["REQUEST_METHOD"]
            self.by_method[m] = self.by_method.get(m, 0) + 1
        return self._body(self.app(environ, start_response))

    def _body(self, body):
        for chunk in body:
            with self.lock:
                self.bytes += len(chunk)
            yield chunk


def serve() -> None:
    """Child process entry: moto's S3 app behind the counter; prints the port, serves
    until stdin closes (the parent exits or stops it)."""
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, _Counter(DomainDispatcherApplication(create_backend_app)), True,
                         request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # EOF: the parent is done
    server.shutdown()


class CountingS3Server:
    """A moto S3 server in a child process, with request/byte counters."""

    def __init__(self) -> None:
        code = f"import sys; sys.path.insert(0, {_ROOT!r}); from bench.bench_remote import serve; serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line.strip():
            raise RuntimeError("the moto server did not start")
        self.endpoint = f"http://127.0.0.1:{int(line)}"

    def _control(self, method: str) -> dict:
        req = urllib.request.Request(self.endpoint + _CONTROL, method=method)
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def reset(self) -> None:
        self._control("DELETE")

    def counts(self) -> dict:
        return self._control("GET")

    def stop(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(10)
        except Exception:  # pragma: no cover - last resort
            self.proc.kill()




# -- the workload ------------------------------------------------------------------------------
def run(quick: bool = False) -> Table:
    import zarrcy
    from zarrcy.codecs import GzipCodec
    from zarrcy.codecs.sharding import clear_index_cache

    from bench.bench_sharding import _data

    n, shard, inner = (128, 64, 16) if quick else (512, 256, 32)
    npoints = 100 if quick else 1000
    nboxes = 20 if quick else 200
    box = 20 if quick else 40
    repeat = 1 if quick else 2

    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
           "AWS_DEFAULT_REGION": "us-east-1",
           # no profile files: keeps tensorstore's AWS SDK from logging their absence
           "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    srv = CountingS3Server()
    try:
        urllib.request.urlopen(urllib.request.Request(f"{srv.endpoint}/{BUCKET}", method="PUT")).close()
        opts = {"endpoint": srv.endpoint, "region": "us-east-1", "access_key_id": "bench", "secret_access_key": "bench"}
        url = f"s3://{BUCKET}/data.zarr"
        data = _data(n)
        mib = data.nbytes / 2**20
        t0 = time.perf_counter()
        w = zarrcy.create_array(url, name="a", shape=data.shape, dtype=data.dtype, chunks=(inner,) * 3,
                                shards=(shard,) * 3, compressors=[GzipCodec(level=1)], fill_value=0,
                                storage_options=opts)
        w[...] = data
        stored = sum(w.store.getsize(k) or 0 for k in w.store.list_prefix("a/c/"))
        print(f"  written by zarrcy in {time.perf_counter() - t0:.1f}s", flush=True)
        rng = np.random.default_rng(1)
        points = [tuple(int(x) for x in p) for p in rng.integers(0, n, (npoints, 3))]
        boxes = [tuple(slice(int(o), int(o) + box) for o in origin) for origin in rng.integers(0, n - box, (nboxes, 3))]

        readers: dict[str, object] = {}
        readers["zarrcy"] = zarrcy.open_array(f"{url}/a", mode="r", storage_options=opts)
        try:
            import warnings

            import zarr
            from obstore.store import S3Store
            from zarr.storage import ObjectStore as ZarrObjectStore

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s3 = S3Store(BUCKET, endpoint=srv.endpoint, region="us-east-1", access_key_id="bench",
                             secret_access_key="bench", client_options={"allow_http": True})
                readers["zarr-python"] = zarr.open_array(ZarrObjectStore(s3, read_only=True), path="data.zarr/a", mode="r")
        except Exception as e:  # pragma: no cover - optional peer
            print(f"  zarr-python unavailable: {type(e).__name__}: {e}")
        try:
            import tensorstore as ts

            spec = {"driver": "zarr3", "kvstore": {"driver": "s3", "bucket": BUCKET, "path": "data.zarr/a/",
                                                   "endpoint": srv.endpoint, "aws_region": "us-east-1"}}
            t = ts.open(spec, read=True).result()
            np.testing.assert_array_equal(t[0, 0, :4].read().result(), data[0, 0, :4])
            readers["tensorstore"] = t
        except Exception as e:  # pragma: no cover - optional peer
            print(f"  tensorstore s3 driver cannot read from the local server: {type(e).__name__}: {str(e)[:200]}")

        def read(name: str, sel) -> np.ndarray:
            r = readers[name]
            if name == "tensorstore":
                return r[sel].read().result()  # type: ignore[index]
            return r[sel]  # type: ignore[index]

        ops = {
            f"full read {mib:.0f} MiB": lambda name: read(name, (slice(None),) * 3),
            f"{npoints} point reads": lambda name: [read(name, p) for p in points],
            f"{nboxes} unaligned {box}^3 reads": lambda name: [read(name, b) for b in boxes],
        }
        peers = list(readers)
        table = Table(
            f"Remote (local moto S3, server in a child process): uint16 {data.shape}, shards {shard}^3, "
            f"inner {inner}^3, gzip 1 ({mib:.0f} MiB, {stored / 2**20:.0f} MiB stored), "
            f"{zarrcy.config()['threads']} threads", peers)
        # correctness first: every reader returns the same data
        for name in peers:
            np.testing.assert_array_equal(read(name, boxes[0]), data[boxes[0]])
            assert int(read(name, points[0])) == int(data[points[0]])
        for op, fn in ops.items():
            times: dict[str, float | None] = {}
            reqs: dict[str, float | None] = {}
            mb: dict[str, float | None] = {}
            runs = repeat if op.startswith("full") else 1  # the others average over many reads already
            for name in peers:
                samples = []
                for k in range(runs):
                    clear_index_cache()
                    srv.reset()
                    t1 = time.perf_counter()
                    fn(name)
                    samples.append(time.perf_counter() - t1)
                    if k == 0:
                        c = srv.counts()
                        reqs[name] = float(c["requests"])
                        mb[name] = round(c["bytes"] / 1e6, 2)
                times[name] = float(np.median(samples))
            table.add(op, times)
            table.add(f"{op}: requests", reqs, unit="")
            table.add(f"{op}: MB fetched", mb, unit=" MB")
        # the result of each reader, once more, after everything (a cheap full check)
        for name in peers:
            np.testing.assert_array_equal(read(name, (slice(0, shard), 0, slice(None))), data[:shard, 0, :])
        return table
    finally:
        srv.stop()
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv).markdown())
