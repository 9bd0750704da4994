"""Remote workload over a local S3 server (moto on 127.0.0.1): a sharded float32 array
read whole, by 1000 random points and by 200 unaligned 40^3 boxes, by zarrcy
(``ObjectStore``, obstore), zarr-python 3 (``zarr.storage.ObjectStore`` over obstore's
``S3Store``) and tensorstore's ``s3`` kvstore driver, all pointed at the same server.

Besides time, the server counts the requests and response bytes each reader needed
for one run of each operation (a WSGI middleware around moto), which is what costs
money and latency against a real object store.  Sizes are small (128^3 float32 =
8 MiB, 64^3 shards of 16^3 chunks, uncompressed) so the run takes seconds on a shared
2-core machine; loopback has no latency, so times mostly measure client CPU overhead
per request -- the request counts are the transferable result.
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.request

import numpy as np

from bench.common import Table, timeit

BUCKET = "bench"


class _Counter:
    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0

    def reset(self) -> None:
        with self.lock:
            self.requests = 0
            self.bytes = 0

    def __call__(self, environ, start_response):
        with self.lock:
            self.requests += 1
        for chunk in self.app(environ, start_response):
            with self.lock:
                self.bytes += len(chunk)
            yield chunk


class CountingS3Server:
    """moto's S3 app behind a request/byte counter, on 127.0.0.1 (random port)."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.counter = _Counter(DomainDispatcherApplication(create_backend_app))
        self.server = make_server("127.0.0.1", 0, self.counter, True, request_handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(5)


class CountTable(Table):
    """A Table whose rows may be counts (requests, MB) rather than seconds."""

    units: dict[str, str]

    def add(self, op: str, results: dict[str, float | None], unit: str = "s") -> None:
        if not hasattr(self, "units"):
            self.units = {}
        self.units[op] = unit
        self.rows.append((op, results))
        fmt = (lambda v: f"{v:.4f}s") if unit == "s" else (lambda v: f"{v:g}{unit}")
        cells = "  ".join(f"{p}={fmt(results[p])}" if results.get(p) is not None else f"{p}=n/a" for p in self.peers)
        print(f"  {op:<34} {cells}", flush=True)

    def markdown(self) -> str:
        head = "| op | " + " | ".join(self.peers) + " | zarrcy ratio to best peer |"
        sep = "|---" * (len(self.peers) + 2) + "|"
        lines = [f"### {self.title}", "", head, sep]
        for op, r in self.rows:
            unit = getattr(self, "units", {}).get(op, "s")
            peers = [r[p] for p in self.peers if p != "zarrcy" and r.get(p) is not None]
            ratio = f"{r['zarrcy'] / min(peers):.2f}×" if r.get("zarrcy") and peers and min(peers) > 0 else "—"
            fmt = (lambda v: f"{v:.4f} s") if unit == "s" else (lambda v: f"{v:g}{unit}")
            cells = " | ".join(fmt(r[p]) if r.get(p) is not None else "—" for p in self.peers)
            lines.append(f"| {op} | {cells} | {ratio} |")
        return "\n".join(lines)


def run(quick: bool = False) -> CountTable:
    import zarrcy

    n = 64 if quick else 128
    shard, chunk = (32, 8) if quick else (64, 16)
    npoints = 50 if quick else 1000
    nboxes = 10 if quick else 200
    box = 20 if quick else 40
    repeat = 1 if quick else 3

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
        data = np.random.default_rng(0).random((n, n, n), dtype=np.float32)
        w = zarrcy.create_array(url, name="a", shape=data.shape, dtype="float32", chunks=(chunk,) * 3,
                                shards=(shard,) * 3, compressors=None, fill_value=0, storage_options=opts)
        w[...] = data
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
            f"full read {n}^3": lambda name: read(name, (slice(None),) * 3),
            f"{npoints} point reads": lambda name: [read(name, p) for p in points],
            f"{nboxes} unaligned {box}^3 reads": lambda name: [read(name, b) for b in boxes],
        }
        peers = list(readers)
        table = CountTable(f"Remote (local moto S3): {n}^3 float32, shards {shard}^3, chunks {chunk}^3, uncompressed", peers)
        # correctness first (and warm-up): every reader returns the same data
        for name in peers:
            np.testing.assert_array_equal(read(name, boxes[0]), data[boxes[0]])
            assert float(read(name, points[0])) == float(data[points[0]])
        for op, fn in ops.items():
            times: dict[str, float | None] = {}
            reqs: dict[str, float | None] = {}
            mb: dict[str, float | None] = {}
            many = not op.startswith("full")  # already an average over many reads: one timed run
            for name in peers:
                times[name] = timeit(lambda: fn(name), repeat=1 if many else repeat, warmup=0)
                srv.counter.reset()
                fn(name)
                reqs[name] = float(srv.counter.requests)
                mb[name] = round(srv.counter.bytes / 1e6, 2)
            table.add(op, times)
            table.add(f"{op}: requests", reqs, unit="")
            table.add(f"{op}: MB fetched", mb, unit=" MB")
        return table
    finally:
        srv.stop()
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    import sys

    print(run(quick="--quick" in sys.argv).markdown())
