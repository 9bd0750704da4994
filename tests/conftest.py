"""Suite-wide settings.

The suite runs against the *installed* zarrcy.  Child Python processes that tests start
(crash, kill and concurrency tests) would otherwise put their working directory first on
``sys.path`` and import the source tree, which has no compiled kernels when the suite runs
from a fresh checkout; ``PYTHONSAFEPATH`` (Python >= 3.11) stops that for every child.
"""

import os

import pytest
from hypothesis import settings

os.environ.setdefault("PYTHONSAFEPATH", "1")

# Property tests run deterministically by default (CONVENTIONS.md rule 14): a bug they
# find fails every run, not 3 runs in 40.  ``HYPOTHESIS_PROFILE=explore`` searches with
# fresh random inputs (then add an ``@example`` for whatever it finds).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _zarrcy_config_restored():
    """Every test starts from the configuration the previous one started from: a test
    that changes ``zarrcy.config`` (threads, write order, coalescing...) cannot leak it
    into later tests (which made a byte-identity test depend on test order)."""
    import zarrcy

    import zarrcy.chunk_cache

    before = zarrcy.config()
    yield
    if zarrcy.config() != before:
        zarrcy.config(**before)
    zarrcy.chunk_cache.clear()  # and the decoded-chunk cache starts empty, its counters at 0
    zarrcy.chunk_cache.stats(reset=True)


# -- the store suite's fixtures that do not depend on the store kind (tests/storage and
# tests/remote each define ``factory``: the stores under test) ----------------------------
@pytest.fixture
def store(factory):
    return factory.new()


@pytest.fixture
def outside(tmp_path):
    """A directory beside the stores that no test may modify through a store."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret").write_bytes(b"secret")
    return d


def _snapshot(path) -> dict[str, bytes]:
    """Every file under ``path`` (relative name -> content), following no symlinks."""
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, path)] = fh.read()
    return out


@pytest.fixture
def take_snapshot():
    return _snapshot
