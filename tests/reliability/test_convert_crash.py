"""``zarrcy convert`` killed at every step, then ``--resume`` (issue 7.2, issue 23 item 0).

Deterministic failure injection (``_faults.FaultyStore``): the real conversion runs on
a wrapper of the destination store that dies before its N-th mutation (every ``set``
and every erased key) -- nothing after it lands, as after a SIGKILL -- for **every** N
of a whole run.  After each kill:

* every destination shard that exists decodes to exactly the source's values (shards
  are replaced atomically: never partial, never garbage);
* a rerun without ``--resume``/``--overwrite`` refuses (an interrupted conversion is
  journaled there from the first mutation on);
* ``--resume`` finishes it and the destination is byte-identical to an uninterrupted
  conversion (every key, every byte; the journal gone).

The same for resumed runs killed again (every kill point, repeatedly), for
``--overwrite`` over an older destination, and with two workers.  A run that is killed
never reports success, and ``--resume`` never reports success on a destination that
differs from what the options produce.

The random SIGKILL campaign of real processes runs only with ``ZARRCY_SLOW=1``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import ConvertError, convert_main
from zarrcy.convert.engine import JOURNAL_DIR, convert
from zarrcy.storage import LocalStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _faults import FaultyStore, Killed  # noqa: E402

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
SHARD = (16, 256)
KW = dict(rewrite=True, shards="16,256", chunks="8,256", compressor="zstd:1", progress="off")
OPTS = ["--rewrite", "--shards", "16,256", "--chunks", "8,256", "--compressor", "zstd:1", "--progress", "off"]


def _make_source(root: str, rows_a: int = 48, rows_b: int = 32) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    g = zarrcy.open_group(root, mode="w")
    g.attrs["title"] = "source"
    want = {
        "a": rng.integers(-1000, 1000, size=(rows_a, 512), dtype=np.int32),
        "b": rng.standard_normal((rows_b, 256)).astype(np.float64),
    }
    want["a"][16:32, 256:] = 0  # one shard of fill values only: never stored
    for name, v in want.items():
        arr = g.create_array(name, shape=v.shape, chunks=(8, 128), dtype=v.dtype, fill_value=0)
        arr[...] = v
    return want


def _keys(root: str) -> dict[str, bytes]:
    """Every key of the store and its bytes (temp files are never keys)."""
    st = LocalStore(root, create=False)
    return {k: st.get(k) for k in st.list()}


def _data_keys(root: str) -> dict[str, bytes]:
    return {k: v for k, v in _keys(root).items() if not k.startswith(JOURNAL_DIR)}


def _check_partial(dst: str, want: dict[str, np.ndarray]) -> None:
    """Every existing shard of every existing destination array is complete."""
    for name, v in want.items():
        try:
            a = zarrcy.open_array(dst, path=name, mode="r")
        except (KeyError, zarrcy.errors.ZarrcyError):
            continue  # not created yet
        assert a.shape == v.shape and a.dtype == v.dtype
        for i in range(0, v.shape[0], SHARD[0]):
            for j in range(0, v.shape[1], SHARD[1]):
                reg = (slice(i, i + SHARD[0]), slice(j, j + SHARD[1]))
                key = f"{name}/c/{i // SHARD[0]}/{j // SHARD[1]}"
                got = a[reg]
                if a.store.exists(key):
                    assert np.array_equal(got, v[reg]), f"{key}: incomplete or wrong after a kill"
                else:
                    assert not np.any(got), f"{key}: absent but not fill"


def _killed_run(src: str, dst: str, die_at: int, **kw) -> FaultyStore:
    fs = FaultyStore(LocalStore(dst), die_at)
    with pytest.raises(Killed):
        convert(src, fs, **{**KW, "workers": 1, **kw})
    return fs


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(src, reference keys, mutations of an uninterrupted run, source values)."""
    root = tmp_path_factory.mktemp("convert_faults")
    src = str(root / "src.zarr")
    want = _make_source(src)
    ref = str(root / "ref.zarr")
    fs = FaultyStore(LocalStore(ref))
    convert(src, fs, **KW, workers=1)
    ref_keys = _keys(ref)
    assert not any(k.startswith(JOURNAL_DIR) for k in ref_keys)
    assert "a/c/1/1" not in ref_keys and len(ref_keys) == 10  # 3 documents + 5 + 2 shards
    return src, ref_keys, fs.ops, want


def test_every_kill_point_of_a_conversion_is_finished_by_resume(tmp_path, setup):
    src, ref_keys, total, want = setup
    assert total > 20
    for n in range(total):
        dst = str(tmp_path / f"d{n}.zarr")
        _killed_run(src, dst, n)
        _check_partial(dst, want)
        if n > 0:  # plan.json is the first mutation: from then on the journal says "interrupted"
            with pytest.raises(ConvertError) as e:
                convert(src, dst, **KW, workers=1)
            assert e.value.exit_code == 2 and "--resume" in str(e.value), n
        rep = convert(src, dst, **KW, workers=1, resume=True)
        assert _keys(dst) == ref_keys, f"kill before mutation {n}: --resume did not give the reference"
        assert not rep.already_complete or n == total, n


def test_resumed_runs_killed_again_at_every_point(tmp_path, setup):
    """Each run (the first and every ``--resume``) dies after ``k`` mutations, until one
    finishes or three were killed; a last ``--resume`` must finish it."""
    src, ref_keys, total, want = setup
    for k in range(1, total, 2):
        dst = str(tmp_path / f"d{k}.zarr")
        finished = False
        for attempt in range(4):
            fs = FaultyStore(LocalStore(dst), k)
            try:
                convert(src, fs, **KW, workers=1, resume=attempt > 0)
                finished = True
                break
            except Killed:
                _check_partial(dst, want)
        if not finished:
            convert(src, dst, **KW, workers=1, resume=True)
        assert _keys(dst) == ref_keys, f"kills after {k} mutations per run"


def test_kill_while_the_journal_is_erased_at_the_end(tmp_path, setup):
    """The last mutations erase the journal, ``plan.json`` last: every kill there leaves
    a journal that ``--resume`` completes and removes."""
    src, ref_keys, total, _ = setup
    fs = FaultyStore(LocalStore(str(tmp_path / "probe.zarr")))
    convert(src, fs, **KW, workers=1)
    last_set = max(i for i, (op, _) in enumerate(fs.log) if op == "set")
    erases = list(range(last_set + 1, fs.ops))
    assert len(erases) > 5 and fs.log[-1] == ("erase", f"{JOURNAL_DIR}/plan.json")
    assert all(op == "erase" and key.startswith(JOURNAL_DIR) for op, key in fs.log[last_set + 1:])
    for n in erases:
        dst = str(tmp_path / f"d{n}.zarr")
        _killed_run(src, dst, n)
        assert _data_keys(dst) == ref_keys  # the data were complete before the journal went
        assert os.path.exists(os.path.join(dst, JOURNAL_DIR, "plan.json"))
        convert(src, dst, **KW, workers=1, resume=True)
        assert _keys(dst) == ref_keys


def test_overwrite_killed_at_every_point(tmp_path, setup):
    """``--overwrite`` over an older destination (other compressor: other bytes), killed
    at every mutation: the journal is marked before anything is erased, so ``--resume``
    erases the rest and never calls a half-erased old destination complete; before the
    mark nothing changed and ``--resume`` refuses (the destination is not what these
    options produce)."""
    src, ref_keys, _, _ = setup
    old = str(tmp_path / "old.zarr")
    convert(src, old, **{**KW, "compressor": "zstd:5"}, workers=1)
    extra = zarrcy.create_array(old, name="extra", shape=(4,), chunks=(2,), dtype="uint8", fill_value=0)
    extra[:] = 9  # a node the new conversion does not have: must be gone afterwards
    old_keys = _keys(old)
    assert old_keys != ref_keys
    fs = FaultyStore(LocalStore(str(tmp_path / "probe.zarr")))
    _copy_tree(old, str(tmp_path / "probe.zarr"))
    convert(src, fs, **KW, workers=1, overwrite=True)
    assert fs.log[0] == ("set", f"{JOURNAL_DIR}/plan.json")  # the "erasing" mark comes first
    for n in range(0, fs.ops, 2):
        dst = str(tmp_path / f"d{n}.zarr")
        _copy_tree(old, dst)
        _killed_run(src, dst, n, overwrite=True)
        if n == 0:
            assert _keys(dst) == old_keys
            with pytest.raises(ConvertError) as e:
                convert(src, dst, **KW, workers=1, resume=True)
            assert e.value.exit_code == 2 and "--overwrite" in str(e.value)
            assert _keys(dst) == old_keys  # refused: nothing touched
            convert(src, dst, **KW, workers=1, overwrite=True)
        else:
            convert(src, dst, **KW, workers=1, resume=True)
        assert _keys(dst) == ref_keys, f"--overwrite killed before mutation {n}"


def test_two_workers_killed_at_every_point(tmp_path, setup):
    """Regions in flight on two threads: whatever the interleaving, the kill stops every
    thread's writes, and ``--resume`` gives the reference."""
    src, ref_keys, total, want = setup
    for n in range(0, total, 3):
        dst = str(tmp_path / f"d{n}.zarr")
        fs = FaultyStore(LocalStore(dst), n)
        with pytest.raises(Killed):
            convert(src, fs, **KW, workers=2)
        _check_partial(dst, want)
        convert(src, dst, **KW, workers=2, resume=True)
        assert _keys(dst) == ref_keys, n


def test_resume_removes_journal_leftovers_without_plan(tmp_path, setup):
    """Leftovers of a clean-up from before plan.json went last (or of any interrupted
    erase): ``--resume`` on a complete destination removes them instead of reporting
    "nothing to do" and leaving them forever."""
    src, ref_keys, _, _ = setup
    dst = str(tmp_path / "dst.zarr")
    convert(src, dst, **KW, workers=1)
    os.makedirs(os.path.join(dst, JOURNAL_DIR, "a"))
    with open(os.path.join(dst, JOURNAL_DIR, "a", "3"), "w") as f:
        f.write("{}")
    rep = convert(src, dst, **KW, workers=1, resume=True)
    assert rep.already_complete
    assert _keys(dst) == ref_keys


def test_resume_refuses_a_destination_these_options_did_not_produce(tmp_path, setup):
    """``--resume`` where no journal is left reports "already complete" only when the
    destination's documents are the ones these options write; an incomplete or different
    one (no journal: e.g. made by another tool, or by other options) is refused."""
    src, ref_keys, _, _ = setup
    dst = str(tmp_path / "dst.zarr")
    convert(src, dst, **{**KW, "compressor": "zstd:5"}, workers=1)
    with pytest.raises(ConvertError) as e:
        convert(src, dst, **KW, workers=1, resume=True)
    assert e.value.exit_code == 2 and "/a" in str(e.value)
    # a node the plan needs is missing (an array erased by hand, or never written)
    dst2 = str(tmp_path / "dst2.zarr")
    convert(src, dst2, **KW, workers=1)
    LocalStore(dst2).erase_prefix("b/")
    with pytest.raises(ConvertError) as e:
        convert(src, dst2, **KW, workers=1, resume=True)
    assert e.value.exit_code == 2 and "/b" in str(e.value)
    assert convert_main([src, str(tmp_path / "dst3.zarr"), *OPTS, "--workers", "1"]) == 0
    assert convert_main([src, str(tmp_path / "dst3.zarr"), *OPTS, "--workers", "1", "--resume"]) == 0


def test_resume_after_a_journaled_object_disappeared(tmp_path, setup):
    """A journaled region is skipped only while its objects still have their checksums:
    a shard erased (or replaced) after the region was journaled is converted again."""
    src, ref_keys, total, _ = setup
    dst = str(tmp_path / "dst.zarr")
    fs = FaultyStore(LocalStore(dst))
    convert(src, fs, **KW, workers=1)
    last_region = max(i for i, (op, key) in enumerate(fs.log) if op == "set" and "/__done/" in key)
    st = LocalStore(dst)
    for victim, how in (("a/c/0/0", "erase"), ("a/c/2/1", "replace"), ("b/c/1/0", "erase")):
        dst_n = str(tmp_path / f"{how}-{victim.replace('/', '_')}.zarr")
        _killed_run(src, dst_n, last_region + 1)  # every region journaled, the journal not erased yet
        st = LocalStore(dst_n)
        assert sum(1 for k in st.list() if "/__done/" in k) == 8
        assert st.get(victim) is not None
        if how == "erase":
            st.erase(victim)
        else:  # another version of the shard: same size, other bytes
            raw = bytearray(st.get(victim))
            raw[-20] ^= 0xFF
            st.set(victim, bytes(raw))
        convert(src, dst_n, **KW, workers=1, resume=True)
        assert _keys(dst_n) == ref_keys, victim


def _copy_tree(a: str, b: str) -> None:
    import shutil

    if os.path.exists(b):
        shutil.rmtree(b)
    shutil.copytree(a, b)


# --------------------------------------------------------------------------------------
# the SIGKILL campaign of real processes (ZARRCY_SLOW=1 only: it depends on timing)
# --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_convert_resume_survives_repeated_sigkills(tmp_path):
    src = str(tmp_path / "src.zarr")
    want = _make_source(src, rows_a=128, rows_b=64)
    ref = str(tmp_path / "ref.zarr")
    opts = [*OPTS, "--workers", "2"]
    assert convert_main([src, ref, *opts]) == 0
    ref_keys = _keys(ref)
    env = dict(os.environ, ZARRCY_CONVERT_REGION_DELAY="0.05")
    rng = random.Random(5)
    kills = completed = 0
    dst = str(tmp_path / "dst0.zarr")
    started = False
    for _ in range(100):
        if kills >= 25:
            break
        args = [sys.executable, "-m", "zarrcy", "convert", src, dst, *opts] + (["--resume"] if started else [])
        p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started = True
        time.sleep(rng.uniform(0.3, 1.5))
        p.send_signal(signal.SIGKILL)  # a no-op if it has exited (Popen.send_signal polls first)
        p.wait()
        err = p.stderr.read().decode()
        p.stderr.close()
        assert p.returncode in (0, -signal.SIGKILL), err[-3000:]
        _check_partial(dst, want)
        if p.returncode == -signal.SIGKILL:  # count only kills that happened
            kills += 1
        else:  # this one finished: check it, then start a fresh conversion
            assert _keys(dst) == ref_keys
            completed += 1
            dst = str(tmp_path / f"dst{completed}.zarr")
            started = False
    if started:  # finish what the last killed run left
        assert convert_main([src, dst, *opts, "--resume"]) == 0
        assert _keys(dst) == ref_keys
    assert kills >= 1
    print(f"convert: {kills} kills, {completed} conversions completed between kills")
