"""Fixtures of the codec tests; plain helpers live in codec_helpers.py."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(params=["libdeflate", "deflate"])
def gzip_route(request: Any) -> Any:
    from zarrcy.codecs import gzip as g

    old = g.set_route(request.param)
    yield request.param
    g.set_route(old)
