"""Not a test: a pytest plugin that runs zarr-python 3.4.2's own test suite with zarrcy's
codec pipeline and counts the pipeline decisions that fell back to zarr-python's, by
reason (printed at the end, with the first test that hit each reason).

    pip download zarr==3.4.2 --no-deps --no-binary :all: -d /tmp/zpsdist
    tar -xzf /tmp/zpsdist/zarr-3.4.2.tar.gz -C /tmp/zpsdist && cd /tmp/zpsdist/zarr-3.4.2
    ZARR_CODEC_PIPELINE__PATH=zarrcy.zarr_plugin.ZarrcyCodecPipeline \
    PYTHONPATH=<zarrcy tree>:<zarrcy tree>/tests/zarr_plugin python -m pytest -q -p no:cacheprovider \
        -p zarr_suite_count -o addopts="" tests --ignore=tests/benchmarks \
        --ignore=tests/test_api/test_synchronous.py --ignore=tests/test_examples.py

(needs pytest-asyncio; test_synchronous.py needs numpydoc and test_examples.py tomlkit).
Measured 2026-11-23: 12,318 passed, 24 failed (all white-box, see the README), and
2,653 of 39,390 pipeline decisions fell back (before issue 14: 58 failed, 43,226 of 71,773).
"""
import collections
import zarrcy.zarr_plugin as zp

_total = collections.Counter()
_orig = zp.ZarrcyCodecPipeline._pipelines
_first = {}
_current = [""]
_orig_fallback = zp._fallback


def _fb(reason):
    _first.setdefault(reason, _current[0])
    _orig_fallback(reason)


zp._fallback = _fb


def _counted(self, specs, writing=False):
    r = _orig(self, specs, writing)
    _total["calls"] += 1
    if r is None:
        _total["fallbacks"] += 1
    return r


zp.ZarrcyCodecPipeline._pipelines = _counted


def pytest_runtest_setup(item):
    _current[0] = item.nodeid


def pytest_sessionfinish(session, exitstatus):
    import sys
    sys.__stdout__.write(f"\nZARRCY-PIPELINE calls={_total['calls']} fallbacks={_total['fallbacks']}\n")
    for k, v in sorted(zp.fallback_counts().items(), key=lambda kv: -kv[1]):
        sys.__stdout__.write(f"ZARRCY-FALLBACK {v} {k}  [first: {_first.get(k)}]\n")
