"""``zarrcy convert`` under repeated SIGKILL (issue 7.2): kill the conversion, then kill
the ``--resume`` runs too, at random moments, several times over.

After every kill: each destination array that exists opens, and every one of its
shards either is absent (reads as the fill value) or decodes to exactly the source's
values -- never partial, never garbage.  A run that finishes before its kill must be
byte-identical to an uninterrupted conversion, and a fresh conversion starts; at the end
one more ``--resume`` finishes the last one, which must be byte-identical too (every
stored object; the journal is gone).

Default run: 4 kills; ``ZARRCY_SLOW=1``: 25.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np

import zarrcy
from zarrcy.convert import convert_main

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
KILLS = 25 if SLOW else 4
OPTS = ["--rewrite", "--shards", "16,256", "--chunks", "8,256", "--compressor", "zstd:1",
        "--progress", "off", "--workers", "2"]
SHARD = (16, 256)


def _stored(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            k = os.path.relpath(p, root)
            if k.startswith("__zarrcy_convert") or f.startswith(".zarrcy-tmp") or ".tmp" in f:
                continue
            with open(p, "rb") as fh:
                out[k] = fh.read()
    return out


def _make_source(root: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    g = zarrcy.open_group(root, mode="w")
    want = {
        "a": rng.integers(-1000, 1000, size=(128, 512), dtype=np.int32),
        "b": rng.standard_normal((64, 256)).astype(np.float64),
    }
    for name, v in want.items():
        arr = g.create_array(name, shape=v.shape, chunks=(8, 128), dtype=v.dtype, fill_value=0)
        arr[...] = v
    return want


def _check_partial(dst: str, want: dict[str, np.ndarray]) -> int:
    """Every existing shard of every existing destination array is complete; return #shards present."""
    present = 0
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
                    present += 1
                    assert np.array_equal(got, v[reg]), f"{key}: incomplete or wrong after a kill"
                else:
                    assert not np.any(got), f"{key}: absent but not fill"
    return present


def test_convert_resume_survives_repeated_kills(tmp_path):
    src = str(tmp_path / "src.zarr")
    want = _make_source(src)
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *OPTS]) == 0
    env = dict(os.environ, ZARRCY_CONVERT_REGION_DELAY="0.05")
    rng = random.Random(5)
    kills = completed = 0
    ref_objects = _stored(ref)
    dst = str(tmp_path / "dst0.zarr")
    started = False
    for _ in range(4 * KILLS):  # bounded, in case runs keep finishing before their kill
        if kills >= KILLS:
            break
        args = [sys.executable, "-m", "zarrcy", "convert", src, dst, *OPTS] + (["--resume"] if started else [])
        p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started = True
        time.sleep(rng.uniform(0.3, 1.0))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        err = p.stderr.read().decode()
        p.stderr.close()
        assert p.returncode in (0, -signal.SIGKILL), err[-3000:]
        _check_partial(dst, want)
        if p.returncode == 0:  # this one finished: check it, then start a fresh conversion
            assert _stored(dst) == ref_objects
            completed += 1
            dst = str(tmp_path / f"dst{completed}.zarr")
            started = False
    if started:  # finish what the last killed run left
        assert convert_main([src, dst, *OPTS, "--resume"]) == 0
    assert _stored(dst) == ref_objects
    assert not os.path.exists(os.path.join(dst, "__zarrcy_convert"))
    for name, v in want.items():
        assert np.array_equal(zarrcy.open_array(dst, path=name, mode="r")[...], v)
    assert kills >= 1
    _record(kills, completed)
    print(f"convert: {kills} kills, {completed} conversions completed between kills")


def _record(kills: int, completed: int) -> None:
    out = os.environ.get("ZARRCY_RELIABILITY_STATS")
    if out:
        import json

        with open(out, "a") as f:
            f.write(json.dumps({"test": "convert", "kills": kills, "completed": completed}) + "\n")


def test_kill_while_erasing_the_journal_is_finished_by_resume(tmp_path, monkeypatch):
    """A finished run killed while erasing its journal (the window the random kills above
    hit once in CI): ``plan.json`` goes last, so the journal is still a journal and
    ``--resume`` skips every region and erases the rest."""
    from zarrcy.convert import journal

    src = str(tmp_path / "src.zarr")
    _make_source(src)
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *OPTS]) == 0
    dst = str(tmp_path / "dst.zarr")
    real = journal.erase_journal

    def killed(store, jroot):  # the entries go, then the "kill" lands before plan.json
        store.erase_values([k for k in store.list_prefix(jroot) if not k.endswith("plan.json")])
        raise KeyboardInterrupt

    monkeypatch.setattr(journal, "erase_journal", killed)
    try:
        convert_main([src, dst, *OPTS])
    except KeyboardInterrupt:
        pass
    assert os.path.exists(os.path.join(dst, "__zarrcy_convert", "plan.json"))
    monkeypatch.setattr(journal, "erase_journal", real)
    assert convert_main([src, dst, *OPTS, "--resume"]) == 0
    assert _stored(dst) == _stored(ref)
    assert not os.path.exists(os.path.join(dst, "__zarrcy_convert"))


def test_resume_removes_journal_leftovers_without_plan(tmp_path):
    """Leftovers of a clean-up from before plan.json went last (or of any interrupted
    erase): ``--resume`` on a complete destination removes them instead of reporting
    "nothing to do" and leaving them forever."""
    src = str(tmp_path / "src.zarr")
    _make_source(src)
    dst = str(tmp_path / "dst.zarr")
    assert convert_main([src, dst, *OPTS]) == 0
    before = _stored(dst)
    os.makedirs(os.path.join(dst, "__zarrcy_convert", "a"))
    with open(os.path.join(dst, "__zarrcy_convert", "a", "3"), "w") as f:
        f.write("{}")
    assert convert_main([src, dst, *OPTS, "--resume"]) == 0
    assert not os.path.exists(os.path.join(dst, "__zarrcy_convert"))
    assert _stored(dst) == before


def test_kill_while_overwrite_erases_is_redone_by_resume(tmp_path, monkeypatch):
    """``--overwrite`` killed while erasing the old destination: the journal says so first,
    so ``--resume`` erases again and converts afresh instead of calling the half-erased
    old destination complete."""
    from zarrcy.convert import journal

    src = str(tmp_path / "src.zarr")
    _make_source(src)
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *OPTS]) == 0
    dst = str(tmp_path / "dst.zarr")
    other = [o if o != "zstd:1" else "zstd:5" for o in OPTS]  # an old destination with other bytes
    assert convert_main([src, dst, *other]) == 0
    real = journal.erase_except

    def killed(store, prefix, keep):  # half the old keys go, then the "kill"
        keys = [k for k in store.list_prefix(prefix) if k != keep]
        store.erase_values(keys[: len(keys) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(journal, "erase_except", killed)
    try:
        convert_main([src, dst, *OPTS, "--overwrite"])
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(journal, "erase_except", real)
    assert convert_main([src, dst, *OPTS, "--resume"]) == 0
    assert _stored(dst) == _stored(ref)
    assert not os.path.exists(os.path.join(dst, "__zarrcy_convert"))
