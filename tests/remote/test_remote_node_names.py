"""Issue 23.9 on an object store (S3 through moto): the node-name table of
tests/node_names_table.py gets the same answers as on LocalStore, MemoryStore and
ZipStore (tests/storage/test_store_node_names.py)."""

from __future__ import annotations

import itertools

from node_names_table import run_sibling_table, run_table
from zarrcy.storage import ObjectStore

_n = itertools.count()


def test_node_name_table_s3(s3_server):
    opts = s3_server[1]

    def new():
        return ObjectStore(f"s3://zarrcy-test/names{next(_n)}", storage_options=opts)

    assert run_table(new, "s3") == []
    assert run_sibling_table(new, "s3") == []
