"""storage_options are checked before the client is built, and nothing the client library
raises -- not even pyo3's PanicException, a BaseException -- escapes as anything but
StoreError (issue 12 item 12).

Before the fix, ``storage_options={"allow_http": True}`` for an ``s3://`` URL (the key
belongs in ``client_options``) escaped as ``pyo3_runtime.PanicException``, which
``except Exception`` does not catch.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import StoreError
from zarrcy.storage import ObjectStore

pytest.importorskip("obstore")


def _panic_class() -> type[BaseException]:
    """pyo3's PanicException (not importable by name): provoke one from obstore itself."""
    import obstore.store

    try:
        obstore.store.from_url("s3://b/p", allow_http=True)
    except BaseException as e:  # noqa: BLE001 - the point of the exercise
        if not isinstance(e, Exception):
            return type(e)
    pytest.skip("this obstore version does not panic on a client option at the top level")


@pytest.mark.parametrize("url,options,match", [
    ("s3://b/p", {"allow_http": True}, r"storage_options\.allow_http: .*client option: pass it as storage_options=\{'client_options'"),
    ("s3://b/p", {"AWS_ALLOW_HTTP": "true"}, r"storage_options\.AWS_ALLOW_HTTP: .*client option"),
    ("gs://b/p", {"allow_http": True}, r"storage_options\.allow_http: .*client option"),
    ("az://acct/cont", {"allow_http": True}, r"storage_options\.allow_http: .*client option"),
    ("s3://b/p", {"evil": 1}, r"^storage_options\.evil: expected one of access_key_id, .*region.*max_concurrency, coalesce, timeout, received 'evil'$"),
    ("gs://b/p", {"evil": 1}, r"^storage_options\.evil: expected one of application_credentials"),
    ("https://example.invalid/p", {"region": "x"}, r"^storage_options\.region: expected one of client_options, retry_config"),
    ("s3://b/p", {"client_options": {"evil": 1}}, r"^storage_options\.client_options\.evil: expected one of allow_http"),
    ("s3://b/p", {"client_options": ["allow_http"]}, r"^storage_options\.client_options: expected a dict"),
    ("s3://b/p", {"retry_config": {"retries": 3}}, r"^storage_options\.retry_config\.retries: expected one of backoff"),
    ("s3://b/p", {1: 2}, r"^storage_options: expected string keys"),
    ("s3://b/p", {"max_concurrency": "many"}, r"^storage_options: expected integers for max_concurrency"),
])
def test_unknown_options_are_store_errors(url, options, match):
    with pytest.raises(StoreError, match=match):
        ObjectStore(url, storage_options=options)
    # and the refused options are not remembered for the URL
    with pytest.raises(StoreError, match=match):
        ObjectStore(url, storage_options=options)


def test_the_issue_repro_through_the_api(s3_url, s3_server):
    opts = dict(s3_server[1], allow_http=True)
    with pytest.raises(StoreError, match="client_options"):
        zarrcy.create_array(s3_url, shape=(4,), chunks=(2,), dtype="uint8", storage_options=opts)


def test_valid_spellings_are_accepted(s3_url, s3_server):
    endpoint, opts = s3_server
    spelled = {"AWS_ACCESS_KEY_ID": opts["access_key_id"], "aws_secret_access_key": opts["secret_access_key"],
               "Region": "us-east-1", "endpoint_url": endpoint, "client_options": {"timeout": "30s"},
               "max_concurrency": 4}
    a = zarrcy.create_array(s3_url, shape=(4,), chunks=(2,), dtype="uint8", storage_options=spelled)
    a[:] = [1, 2, 3, 4]
    assert a[:].tolist() == [1, 2, 3, 4]
    ObjectStore("az://acct/cont", storage_options={"azure_storage_account_name": "acct", "use_emulator": "true"})


def test_panics_from_client_calls_become_store_errors(s3_url, s3_server):
    panic = _panic_class()
    a = zarrcy.create_array(s3_url, shape=(4,), chunks=(2,), dtype="uint8", storage_options=s3_server[1])
    a[:] = 1
    store = a.store
    real = store._ob

    def boom(*args, **kwargs):
        raise panic("called `Option::unwrap()` on a `None` value")

    fake = types.SimpleNamespace(exceptions=real.exceptions, get=boom, head=boom, put=boom, delete=boom, list=boom,
                                 list_with_delimiter=boom)
    store._ob = fake
    try:
        for op in (lambda: store.get("c/0"), lambda: store.exists("c/0"), lambda: store.set("c/0", b"x"),
                   lambda: store.erase("c/0"), lambda: list(store.list()), lambda: store.list_dir(""),
                   lambda: store.get_partial_values([("c/0", None), ("c/1", None)])):
            with pytest.raises(StoreError, match="Option::unwrap"):
                op()
        with pytest.raises(StoreError):
            a[:]

        def interrupt(*args, **kwargs):
            raise KeyboardInterrupt

        fake.get = interrupt
        with pytest.raises(KeyboardInterrupt):  # control flow is never swallowed
            store.get("c/0")
    finally:
        store._ob = real
    assert np.array_equal(a[:], [1, 1, 1, 1])
