"""Issue 23.9: one node-name validator, the same answer on every store (table in
tests/node_names_table.py; the S3 run is tests/remote/test_remote_node_names.py)."""

from __future__ import annotations

import unicodedata

import pytest

from node_names_table import run_sibling_table, run_table
from zarrcy.errors import StoreError
from zarrcy.metadata import names


def test_node_name_table(factory):
    assert run_table(factory.new, factory.kind) == []


def test_sibling_table(factory):
    assert run_sibling_table(factory.new, factory.kind) == []


@pytest.mark.parametrize("key", ["a\\..\\..\\y/zarr.json", "a\\b", "c:x/zarr.json", "x/..", "a//b", "a\x00"])
def test_store_keys_refused_alike(factory, key):
    store = factory.new()
    with pytest.raises(StoreError):
        store.set(key, b"{}")
    with pytest.raises(StoreError):
        store.get(key)


def test_ascii_nfc_targets_are_complete():
    """``may_collide`` lists every ASCII character that is the NFC form of another code
    point; checked against the whole code space (this Python's Unicode database)."""
    targets = set()
    for c in range(0x80, 0x110000):
        n = unicodedata.normalize("NFC", chr(c))
        if n.isascii():
            targets.add(n)
    assert targets == set(names._ASCII_NFC_TARGETS)
    assert not names.may_collide("abc") and names.may_collide("K") and names.may_collide("\u00e9")
