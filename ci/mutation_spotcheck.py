"""Mutation spot-check: does the test suite catch the bugs that matter? (issue 15 item 8)

Plants ONE deliberate bug at a time in a scratch copy of zarrcy's pure-Python sources
(never in the working tree), runs the pytest subset that should catch it against that
copy, and reports each mutant as

* ``killed``   -- at least one test failed (the test suite catches this bug);
* ``SURVIVED`` -- every test passed: a bug of this kind would go unnoticed;
* ``ERROR``    -- the mutant could not be planted (the source it edits changed: update
  the table below) or the run did not start.

The scratch copy holds ``zarrcy/`` (with the compiled kernels of the tree, ``*.so``),
``tests/``, ``conftest.py`` and ``pyproject.toml``; pytest runs there with ``PYTHONPATH``
naming the copy, so the root conftest selects the mutated sources ("kernels compiled in
place").  Before the mutants, the unmutated copy must pass the union of the subsets
(otherwise a "killed" would mean nothing) and must import zarrcy from the copy.

Usage (from the repository root, with the kernels compiled in place)::

    python ci/mutation_spotcheck.py            # every mutant
    python ci/mutation_spotcheck.py --list     # the table, nothing run
    python ci/mutation_spotcheck.py --only basic-int-past-end,e4m3fn-overflow
    python ci/mutation_spotcheck.py --only e4m3fn-overflow --tests tests/metadata/test_fill_value_boundaries.py

Exit status 0 when every mutant is killed, 1 when one survives or errors.  Runs in a few
minutes (one pytest process per mutant, ``-x``); not part of ``.ci/run``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # relative to zarrcy/
    old: str  # exact source text; must occur at least ``occurrence + 1`` times
    new: str
    tests: tuple[str, ...]  # pytest arguments (files, node ids) relative to the root
    why: str  # the bug, in words
    occurrence: int = 0  # which occurrence of ``old`` to replace (0: the first)
    extra: tuple[str, ...] = field(default=())  # further pytest arguments (-k ...)
    # (old, new) pairs tried when ``old`` is absent: the same bug in another version of
    # the source (e.g. before and after a refactoring of the module)
    alt: tuple[tuple[str, str], ...] = field(default=())
    # further files (relative to zarrcy/) the code may live in, tried in order after ``file``
    moved: tuple[str, ...] = field(default=())


# the pytest subsets (keep each a few seconds: a surviving mutant runs all of it)
T_SEL = ("tests/array/test_selection_bounds.py",)
T_FILL = ("tests/metadata/test_fill_value.py", "tests/metadata/test_fill_value_boundaries.py")
T_EXT = ("tests/metadata/test_extension_rules.py", "tests/metadata/test_array_metadata.py")
T_CORRUPT = ("tests/reliability/test_corrupt_chunk_errors.py",)
T_KEYS = ("tests/metadata/test_chunk_key_encoding.py", "tests/array/test_selection_bounds.py")
T_ORDER = ("tests/reliability/test_crash_ordering.py",)
T_CONVERT_CRASH = ("tests/reliability/test_convert_crash.py",)
T_DUP = ("tests/array/test_duplicate_index_writes.py",)
T_HOSTILE_WRITES = ("tests/reliability/test_hostile_shard_writes.py",)
T_BOMB_PATHS = ("tests/reliability/test_bomb_entry_points.py",)
T_BOUNDARY = ("tests/reliability/test_boundary_tables.py",)

MUTANTS: list[Mutant] = [
    # ---------------------------------------------------------------- indexing.py
    Mutant("basic-int-past-end", "indexing.py", "if i < -n or i >= n:", "if i < -n or i > n:", T_SEL,
           "a[n] on an n-row array accepted (reads fill / writes into the edge chunk)"),
    Mutant("basic-int-before-start", "indexing.py", "if i < -n or i >= n:", "if i < -n - 1 or i >= n:", T_SEL,
           "a[-n-1] accepted (wraps to -1)"),
    Mutant("ortho-array-past-end", "indexing.py", "if lo < -n or hi >= n:", "if lo < -n or hi > n:", T_SEL,
           "oindex / basic integer array containing n accepted"),
    Mutant("ortho-array-before-start", "indexing.py", "if lo < -n or hi >= n:", "if lo < -n - 1 or hi >= n:", T_SEL,
           "oindex integer array containing -n-1 accepted"),
    Mutant("vindex-past-end", "indexing.py", "if lo < -n or hi >= n:", "if lo < -n or hi > n:", T_SEL,
           "vindex coordinate n accepted", occurrence=1),
    Mutant("vindex-before-start", "indexing.py", "if lo < -n or hi >= n:", "if lo < -n - 1 or hi >= n:", T_SEL,
           "vindex coordinate -n-1 accepted", occurrence=1),
    Mutant("uint64-wrap-unchecked", "indexing.py", "if arr.dtype.kind == \"u\" and arr.dtype.itemsize == 8 and arr.size:",
           "if False:", T_SEL, "uint64 indices >= 2**63 wrap to negatives in the int64 cast (2**64 - 1 reads the last row)"),
    Mutant("mask-longer-accepted", "indexing.py", "if arr.ndim != 1 or arr.shape[0] != n:",
           "if arr.ndim != 1 or arr.shape[0] < n:", T_SEL, "a boolean mask longer than the axis accepted"),
    Mutant("vindex-mask-shape-unchecked", "indexing.py", "if mask.shape != tuple(shape):",
           "if mask.ndim != len(shape):", T_SEL, "vindex boolean mask of another shape accepted"),
    Mutant("zero-step-accepted", "indexing.py", "if step <= 0:", "if step < 0:", T_SEL,
           "slice step 0 gives ValueError instead of IndexError"),
    Mutant("rank-check-skipped-0d", "indexing.py", "if n_real > ndim:", "if n_real > ndim and ndim:", T_SEL,
           "a[0] on a 0-d array accepted (the rank check skipped for 0-d)"),
    Mutant("rank-check-off-by-one", "indexing.py", "if n_real > ndim:", "if n_real > ndim + 1:", T_SEL,
           "one index too many accepted (and ignored)"),
    Mutant("vindex-rank-unchecked", "indexing.py", "if len(selection) != ndim:", "if len(selection) > ndim:", T_SEL,
           "vindex with fewer index arrays than dimensions accepted"),
    Mutant("strided-slice-complete", "indexing.py", "complete = step == 1 and a == 0 and b == valid",
           "complete = a == 0 and b == valid", T_SEL,
           "a strided slice covering a chunk's ends counted as the whole chunk (a write drops the skipped elements)"),
    Mutant("empty-slice-one-element", "indexing.py", "    if stop <= start:\n", "    if stop < start:\n", T_SEL,
           "an empty slice (a[n:], a[3:3]) selects one element"),
    Mutant("blocks-past-end", "indexing.py", "b0 = _index_int(e, nblocks, axis)", "b0 = _index_int(e, nblocks + 1, axis)",
           T_SEL, "a.blocks[nblocks] accepted"),
    Mutant("ortho-set-int-kept", "indexing.py", "            norm.append(slice(s, s + 1))\n", "            norm.append(s)\n",
           T_SEL + ("tests/array/test_indexing_property.py",),
           "a chunk write keeps an int beside an index array: numpy's advanced-index reordering transposes the value"),
    # ---------------------------------------------------------------- array.py (nodes/ after the layering split)
    Mutant("point-past-end", "array.py", "if i < 0 or i >= n:", "if i < 0 or i > n:", T_SEL,
           "a[n, j] (one int per dimension: the point path) accepted", moved=("nodes/array_read.py",)),
    Mutant("point-before-start", "array.py", "            if i < 0:\n                i += n\n",
           "            if i < -1:\n                i += n\n", T_SEL, "a[-1, j] on the point path not wrapped",
           moved=("nodes/array_read.py",)),
    Mutant("mask-selection-shape-unchecked", "array.py", "if m.dtype != np.bool_ or m.shape != self.shape:",
           "if m.dtype != np.bool_:", T_SEL, "get/set_mask_selection with a mask of another shape",
           moved=("nodes/array_base.py",)),
    # ---------------------------------------------------------------- corrupt chunks
    Mutant("corrupt-key-not-named", "array.py", "new.args = (f\"{key}: {e}\",)", "new.args = (str(e),)", T_CORRUPT,
           "a CorruptChunkError that does not name the chunk's store key", moved=("nodes/array_base.py",)),
    Mutant("crc32c-unchecked", "codecs/crc32c_.py", "if stored != actual:", "if False:", T_CORRUPT,
           "crc32c decodes without verifying the checksum"),
    Mutant("bytes-size-unchecked", "codecs/bytes.py", "if n != spec.nbytes:", "if False:", T_CORRUPT,
           "the bytes codec decodes a chunk of the wrong size"),
    # ---------------------------------------------------------------- metadata/fill_value.py
    Mutant("e4m3fn-overflow", "metadata/fill_value.py",
           "if biased > max_biased or (fmt.special == \"fn\" and biased == max_biased and man == (1 << M) - 1):",
           "if biased > max_biased:", T_FILL, "float8_e4m3fn: a value rounding to the NaN pattern (>= 464) accepted"),
    Mutant("ieee-overflow-to-nan", "metadata/fill_value.py",
           "max_biased = (1 << E) - 2 if fmt.special == \"ieee\" else (1 << E) - 1",
           "max_biased = (1 << E) - 1", T_FILL, "IEEE types: overflow gives a NaN pattern instead of infinity"),
    Mutant("ieee-overflow-refused", "metadata/fill_value.py",
           "        if fmt.special == \"ieee\":\n            return sign | (((1 << E) - 1) << M)\n", "", T_FILL,
           "IEEE types: a number beyond the largest finite refused instead of rounding to infinity"),
    Mutant("ties-away-from-zero", "metadata/fill_value.py", "if r2 > den or (r2 == den and q & 1):",
           "if r2 >= den:", T_FILL, "halfway values round away from zero instead of to even"),
    Mutant("subnormal-range", "metadata/fill_value.py", "    if e < emin:\n        e = emin", "    if e < emin - 1:\n        e = emin",
           T_FILL, "the smallest subnormals rounded with the wrong quantum"),
    Mutant("short-hex-accepted", "metadata/fill_value.py", "len(value) == 2 + ndigits", "len(value) <= 2 + ndigits",
           T_FILL, "'0x' with fewer hex digits than 2 x itemsize accepted"),
    Mutant("hex-wider-than-type", "metadata/fill_value.py", "            if bits >> fmt.nbits:\n",
           "            if False:\n", T_FILL, "float4_e2m1fn '0x1f' (5 bits) accepted"),
    Mutant("nan-for-nan-less-type", "metadata/fill_value.py", "if fmt.nan_bits is None:", "if False:", T_FILL,
           "'NaN' accepted for float4_e2m1fn (no NaN)"),
    Mutant("infinity-for-fn-type", "metadata/fill_value.py", "if fmt.special != \"ieee\":",
           "if fmt.special == \"finite\":", T_FILL, "'Infinity' accepted for float8_e4m3fn (no infinity)"),
    Mutant("plus-infinity-refused", "metadata/fill_value.py", "if value in (\"Infinity\", \"+Infinity\", \"-Infinity\"):",
           "if value in (\"Infinity\", \"-Infinity\"):", T_FILL, "'+Infinity' refused"),
    Mutant("fast-path-unbounded", "metadata/fill_value.py", "if limit is not None and -limit <= value <= limit:",
           "if limit is not None:", T_FILL, "float16/float32 beyond the largest finite take numpy's overflowing cast"),
    Mutant("nan-payload-dropped", "metadata/fill_value.py", "        if bits == fmt.nan_bits:\n", "        if True:\n", T_FILL,
           "every NaN written as \"NaN\" (a payload NaN loses its bits)"),
    Mutant("negative-zero-written-as-zero", "metadata/fill_value.py", "    if v == 0 or fmt.man_bits == 52:\n        return v\n",
           "    if v == 0:\n        return 0.0\n    if fmt.man_bits == 52:\n        return v\n", T_FILL,
           "-0.0 written back as 0.0"),
    Mutant("int-range-past-max", "metadata/fill_value.py", "if json_value < lo or json_value > hi:",
           "if json_value < lo or json_value > hi + 1:", T_FILL, "integer fill one past the maximum accepted"),
    Mutant("bool-accepts-int", "metadata/fill_value.py", "if t is bool or t is np.bool_:",
           "if t is bool or t is np.bool_ or t is int:", T_FILL, "bool fill 0/1 accepted"),
    Mutant("raw-byte-256", "metadata/fill_value.py", "if type(b) is not int or not 0 <= b <= 255:",
           "if type(b) is not int or not 0 <= b <= 256:", T_FILL, "raw fill byte 256 accepted"),
    Mutant("fixed-string-too-long", "metadata/fill_value.py", "if len(value) > n or _has_surrogate(value):",
           "if len(value) > n + 1 or _has_surrogate(value):", T_FILL, "U<n> fill of n+1 code points accepted"),
    Mutant("complex-hex-digits", "metadata/fill_value.py", "nd = data_type.itemsize  #", "nd = 2 * data_type.itemsize  #",
           T_FILL, "complex components in hex need the digits of the whole complex"),
    # ---------------------------------------------------------------- metadata/_parse.py
    Mutant("must-understand-not-bool", "metadata/_parse.py", "if type(mu) is not bool:", "if mu not in (True, False):",
           T_EXT, "must_understand 1 / 0 / 1.0 accepted"),
    Mutant("must-understand-default-false", "metadata/_parse.py", "mu = value.get(\"must_understand\", True)",
           "mu = value.get(\"must_understand\", False)", T_EXT,
           "an unknown extension without must_understand ignored instead of refused"),
    Mutant("extension-extra-keys", "metadata/_parse.py", "if not _EXT_KEYS.issuperset(value):", "if False:", T_EXT,
           "an extension object with members beyond name/configuration/must_understand accepted",
           alt=(("    check_keys(value, path, _EXT_KEYS)\n", ""),)),
    Mutant("extension-null-configuration", "metadata/_parse.py", "if \"configuration\" in value and config is None:",
           "if False:", T_EXT, "\"configuration\": null accepted",
           alt=(("    elif not isinstance(config, dict):\n", "    elif config is not None and not isinstance(config, dict):\n"),)),
    Mutant("extension-one-letter-name", "metadata/_parse.py", "if len(name) >= 2 and", "if len(name) >= 1 and", T_EXT,
           "a one-letter extension name accepted (the name pattern needs two characters)"),
    Mutant("expect-int-past-max", "metadata/_parse.py", "if value < minimum or value > maximum:",
           "if value < minimum or value > maximum + 1:", T_EXT, "an integer one past its maximum accepted"),
    Mutant("expect-int-accepts-bool", "metadata/_parse.py", "    if type(value) is not int:\n        if isinstance(value, np.integer):",
           "    if not isinstance(value, int):\n        if isinstance(value, np.integer):", T_EXT, "true accepted as the integer 1"),
    Mutant("max-rank-off-by-one", "metadata/_parse.py", "if len(shape) > MAX_RANK:", "if len(shape) > MAX_RANK + 1:",
           T_EXT, "65 dimensions accepted"),
    Mutant("json-depth-off-by-one", "metadata/_parse.py", "if len(stack) >= max_depth:", "if len(stack) > max_depth:",
           T_EXT, "attributes nested one level deeper than MAX_JSON_DEPTH accepted"),
    Mutant("document-not-object", "metadata/_parse.py", "    if type(doc) is not dict:\n        raise",
           "    if False:\n        raise", T_EXT, "a metadata document that is a JSON array accepted"),
    # ---------------------------------------------------------------- chunk_key_encoding.py
    Mutant("default-key-c-any-rank", "chunk_key_encoding.py", "return () if not ndim else None", "return ()", T_KEYS,
           "chunk key 'c' (the 0-d key) decoded for an n-d array (rank check skipped for 0-d keys)"),
    Mutant("v2-key-rank-unchecked", "chunk_key_encoding.py", "            return () if key == \"0\" else None\n",
           "            return ()\n", T_KEYS, "any v2 key decoded as the 0-d key"),
    # ---------------------------------------------------------------- crash ordering (issue 23)
    Mutant("resize-metadata-first", "nodes/array_write.py", "        if delete_outside:\n            # erase first",
           "        self._write_metadata(new_meta)\n        if delete_outside:\n            # erase first", T_ORDER,
           "resize writes the new zarr.json before erasing: a kill in between leaves chunks outside the shape"),
    Mutant("grow-no-erase", "nodes/array_write.py", "                self._erase_chunks_beyond(old_grid, new_grid)",
           "                pass", T_ORDER, "growing shows leftover chunks beyond the old shape"),
    Mutant("grow-slab-corner", "nodes/array_write.py", "if k == d else range(new_grid[k])",
           "if k == d else range(old_grid[k])", T_ORDER,
           "growing two axes at once misses the corner slab (new rows x new columns)"),
    Mutant("append-undo-keeps-torn-index", "codecs/sharding/writer.py",
           "            setter.set_partial(0, layout.encode_index(np.asarray(flat, np.uint64)))", "            pass",
           T_ORDER, "a failed in-place append to a start-index shard is cut back but its index is not restored"),
    Mutant("journal-crc-unchecked", "convert/journal.py", "        if _crc(data) != crc:", "        if False:",
           T_CONVERT_CRASH, "--resume skips a journaled region whose shard was erased or replaced since"),
    Mutant("journal-plan-erased-first", "convert/engine.py",
           "    store.erase_values([k for k in store.list_prefix(jroot) if k != plan_key])",
           "    store.erase(plan_key)\n    store.erase_values([k for k in store.list_prefix(jroot) if k != plan_key])",
           T_CONVERT_CRASH, "the journal's plan.json erased first: a kill leaves entries without a journal"),
    Mutant("overwrite-unmarked", "convert/engine.py", "\"format\": dst_fmt, \"erasing\": True}",
           "\"format\": dst_fmt, \"erasing\": False}", T_CONVERT_CRASH,
           "--overwrite does not mark the journal before erasing: --resume keeps half-erased old nodes"),
    Mutant("resume-trusts-any-node", "convert/engine.py",
           "            differs = _differs_from_plan(dst_store, plans, groups, dst_root, dst_fmt)",
           "            differs = None", T_CONVERT_CRASH,
           "--resume without a journal calls any existing destination complete"),
    # ---------------------------------------------------------------- repeated indices (issue 23)
    Mutant("oindex-full-by-count", "codecs/sharding/projection.py",
           "self.full.append([x.size == c and bool((x == ar).all()) for x in csel])",
           "self.full.append([x.size == c for x in csel])", T_DUP,
           "sharded oindex: [2, 2] on an inner chunk of two taken as covering it (the other cell overwritten)"),
    Mutant("vindex-unstable-order", "codecs/sharding/writer.py", "order = np.argsort(lin, kind=\"stable\")",
           "order = np.argsort(lin)", T_DUP, "sharded vindex: a repeated point keeps an arbitrary value, not the last"),
    # ---------------------------------------------------------------- hostile shards on the write path (issue 23)
    Mutant("append-kept-entries-unchecked", "codecs/sharding/writer.py",
           "        _check_in_shard(layout, kept_ids, old_off[kept_ids], old_nb[kept_ids], size)", "        pass",
           T_HOSTILE_WRITES, "the append strategy carries an oversized index entry into the new index"),
    Mutant("splice-reads-every-chunk", "codecs/sharding/writer.py", "    need = np.unique(part[stored[part]])",
           "    need = np.flatnonzero(stored)", T_HOSTILE_WRITES,
           "a spliced rewrite reads every stored inner chunk, not only the partially covered ones"),
    Mutant("zstd-no-size-capped-globally", "codecs/zstd.py",
           "            check_frames(data)\n            self._decompress(data, dst)\n            return True",
           "            out = decompress_capped(data, int(_config_get(\"max_chunk_bytes\")))\n"
           "            dst[:] = out[:dst.shape[0]]\n            return True", T_BOMB_PATHS,
           "a zstd frame without a content size decoded up to max_chunk_bytes, not the chunk's size"),
    # ---------------------------------------------------------------- boundary tables (issue 23)
    Mutant("concat-float-step-exact", "storage/hdf5.py", "    if dt.kind not in \"fc\":\n        return bool(x == y)",
           "    if True:\n        return bool(x == y)", T_BOUNDARY,
           "--concat-dim: floating-point steps compared exactly (1/24-day files refused as a gap)"),
    Mutant("hdf5-key-leading-zero", "storage/hdf5.py", "p.isdigit() and (p[0] != \"0\" or p == \"0\")",
           "p.isdigit()", T_BOUNDARY, "HDF5 store: c/01 served as an alias of c/1"),
    Mutant("attrs-shared-depth-unchecked", "metadata/_parse.py", "            if len(stack) + hit[1] > max_depth:",
           "            if False:", T_BOUNDARY,
           "attributes: a shared sub-object used again deeper than the depth limit is accepted"),
]


def _plant(src: str, m: Mutant) -> str:
    if m.old not in src:
        for old, new in m.alt:
            if src.count(old) == 1:
                return src.replace(old, new)
    parts = src.split(m.old)
    if len(parts) <= m.occurrence + 1:
        raise LookupError(f"{m.file}: {m.old!r} occurs {len(parts) - 1} times (need occurrence {m.occurrence})")
    head = m.old.join(parts[: m.occurrence + 1])
    tail = m.old.join(parts[m.occurrence + 1:])
    return head + m.new + tail


def _locate(pkg: Path, m: Mutant) -> tuple[Path, str, str]:
    """(file, its source, the mutated source): the first of ``m.file``, ``m.moved`` that
    exists and holds the code the mutant edits."""
    errors = []
    for rel in (m.file, *m.moved):
        path = pkg / rel
        if not path.exists():
            errors.append(f"{rel}: no such file")
            continue
        src = path.read_text()
        try:
            return path, src, _plant(src, m)
        except LookupError as e:
            errors.append(str(e))
    raise LookupError("; ".join(errors))


def _scratch(root: Path) -> Path:
    """A copy of the package (sources and compiled kernels) and the tests."""
    work = Path(tempfile.mkdtemp(prefix="zarrcy-mutants-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.c", "*.o", "build")
    shutil.copytree(root / "zarrcy", work / "zarrcy", ignore=ignore)
    shutil.copytree(root / "tests", work / "tests", ignore=ignore)
    for f in ("conftest.py", "pyproject.toml"):
        shutil.copy2(root / f, work / f)
    return work


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(work)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a restored source never meets a stale .pyc
    env.pop("PYTHONSAFEPATH", None)
    return env


def _pytest(work: Path, args: list[str], timeout: float) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=--strict-markers", *args]
    try:
        r = subprocess.run(cmd, cwd=work, env=_env(work), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return r.returncode, r.stdout + r.stderr


def _first_failure(out: str) -> str:
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0].split(" ", 1)[1]
    return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per pytest run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copy")
    ap.add_argument("--tests", help="comma-separated pytest paths run for every mutant instead of its own subset "
                                    "(e.g. to see whether one new test file alone kills a group of mutants)")
    a = ap.parse_args(argv)
    mutants = MUTANTS
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {m.id for m in MUTANTS}
        if unknown:
            ap.error(f"unknown mutant ids: {sorted(unknown)}")
        mutants = [m for m in MUTANTS if m.id in want]
    if a.tests:
        mutants = [replace(m, tests=tuple(a.tests.split(",")), extra=()) for m in mutants]
    if a.list:
        for m in mutants:
            print(f"{m.id:32} {m.file:26} {m.why}")
        return 0

    t0 = time.monotonic()
    work = _scratch(ROOT)
    try:
        check = subprocess.run([sys.executable, "-c", "import zarrcy, sys; sys.stdout.write(zarrcy.__file__)"],
                               cwd=work, env=_env(work), capture_output=True, text=True)
        if not check.stdout.startswith(str(work)):
            print(f"the scratch copy does not import its own zarrcy: {check.stdout or check.stderr}", file=sys.stderr)
            return 2
        subsets = sorted({t for m in mutants for t in m.tests})
        rc, out = _pytest(work, subsets, a.timeout * 2)
        if rc != 0:
            print("the unmutated copy fails its tests; fix that first:\n" + out[-3000:], file=sys.stderr)
            return 2
        print(f"baseline: {len(subsets)} test files pass unmutated ({time.monotonic() - t0:.0f} s)")
        results = []
        for m in mutants:
            t1 = time.monotonic()
            try:
                path, original, mutated = _locate(work / "zarrcy", m)
                path.write_text(mutated)
            except LookupError as e:
                results.append((m, "ERROR", str(e)))
                print(f"  {m.id:32} ERROR     {e}", flush=True)
                continue
            try:
                rc, out = _pytest(work, [*m.tests, *m.extra], a.timeout)
            finally:
                path.write_text(original)
            if rc == 0:
                status, detail = "SURVIVED", "every test passed"
            elif rc in (1, -1):
                status, detail = "killed", _first_failure(out) if rc == 1 else "timeout"
            else:
                status, detail = "ERROR", f"pytest exit status {rc}: {out.strip().splitlines()[-1:]}"
            results.append((m, status, detail))
            print(f"  {m.id:32} {status:9} {detail}  ({time.monotonic() - t1:.0f} s)", flush=True)
    finally:
        if a.keep:
            print(f"scratch copy kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    killed = sum(1 for _, s, _ in results if s == "killed")
    print(f"\n{killed} of {len(results)} mutants killed in {time.monotonic() - t0:.0f} s")
    for m, s, d in results:
        if s != "killed":
            print(f"  {s}: {m.id} ({m.file}): {m.why} -- {d}")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
