"""Measure how much of zarr-python's user guide runs unchanged with ``zarr`` -> ``zarrcy``.

Not a test (no ``test_`` prefix): a tool that needs zarr-python's docs checked out.

    pip download zarr==3.4.2 --no-deps --no-binary :all: -d /tmp/zpsdist   # the sdist has docs/ and tests/
    tar -xzf /tmp/zpsdist/zarr-3.4.2.tar.gz -C /tmp/zpsdist
    python tests/api/userguide.py /tmp/zpsdist/zarr-3.4.2/docs [-v]

(run with zarr-python 3.4.2 installed and zarrcy importable; ``-v`` lists every block
that does not print the same as zarr-python).  Measured 2026-11-23: 116 blocks; zarr-python
itself runs 111 (the other 5 use rectilinear chunk grids without enabling that
experimental feature); with zarrcy 107 run unchanged, 67 print identical output and 101
identical except reprs / info reports.  The 9 that fail are the rectilinear-chunk-grid
blocks (not implemented in zarrcy).

Every ``python exec="true"`` block of quick-start.md and user-guide/{arrays, groups,
attributes, consolidated_metadata}.md runs in its session (blocks of one session share a
namespace, as in the docs build), once with zarr-python and once with the module renamed
(``import zarr`` -> ``import zarrcy``, ``zarr.x`` -> ``zarrcy.x``), each in its own
subprocess and empty working directory.  A block "runs" when it raises nothing; its output
is "identical" when its stdout equals zarr-python's, and "identical except reprs" when the
lines that differ are object reprs / info reports (lines naming the library or its types).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

FILES = [
    "quick-start.md",
    "user-guide/arrays.md",
    "user-guide/groups.md",
    "user-guide/attributes.md",
    "user-guide/consolidated_metadata.md",
]

_FENCE = re.compile(r'^```python([^\n]*)\n(.*?)^```', re.S | re.M)


def blocks(docs: str) -> list[tuple[str, str, int, str]]:
    """(file, session, index, code) for each executed python block."""
    out = []
    for f in FILES:
        text = open(os.path.join(docs, f), encoding="utf-8").read()
        for i, m in enumerate(_FENCE.finditer(text)):
            opts = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if opts.get("exec") != "true":
                continue
            out.append((f, opts.get("session", f), i, m.group(2)))
    return out


# the module name only: not "zarr.json", "data/zarr", "'zarr'" inside strings
_RENAME = re.compile(r"(?<![\w/'\"-])zarr\b(?!\.json)(?![-_])")


def rename(code: str) -> str:
    return _RENAME.sub("zarrcy", code)


_CHILD = r"""
import io, json, sys, traceback, contextlib, warnings
warnings.simplefilter("ignore")
blocks = json.load(sys.stdin)
ns = {"__name__": "__main__"}
res = []
for code in blocks:
    buf = io.StringIO()
    err = None
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "<block>", "exec"), ns)
    except BaseException as e:
        err = f"{type(e).__name__}: {e}".splitlines()[0][:300]
    res.append({"out": buf.getvalue(), "err": err})
sys.__stdout__.write("\n@@RESULT@@" + json.dumps(res))
"""


def run_session(codes: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        p = subprocess.run(
            [sys.executable, "-c", _CHILD], input=json.dumps(codes), capture_output=True, text=True, cwd=tmp,
            env=env, timeout=600,
        )
    if "@@RESULT@@" not in p.stdout:
        return [{"out": "", "err": "crashed: " + p.stderr[-300:]} for _ in codes]
    return json.loads(p.stdout.split("@@RESULT@@", 1)[1])


_REPR = re.compile(r"zarr|Array|Group|Store|<|Codec|Type|Serializer|Compressors|Filters|Data type|Shape|Chunk|"
                   r"No\. bytes|Order|Read-only|Fill value|Storage ratio|Shard|Attributes|Name|Path", re.I)


def same_except_reprs(a: str, b: str) -> bool:
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        # info reports have different line sets: compare what is not a report line
        la = [x for x in la if not _REPR.search(x)]
        lb = [x for x in lb if not _REPR.search(x)]
        return la == lb
    return all(x == y or (_REPR.search(x) and _REPR.search(y)) for x, y in zip(la, lb))


def main() -> None:
    docs = sys.argv[1]
    verbose = "-v" in sys.argv
    bl = blocks(docs)
    sessions: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for f, s, i, code in bl:
        sessions.setdefault((f, s), []).append((i, code))
    n = ran = same = near = 0
    for (f, s), items in sessions.items():
        ref = run_session([c for _, c in items])
        got = run_session([rename(c) for _, c in items])
        for (i, code), r, g in zip(items, ref, got):
            n += 1
            ok = g["err"] is None
            ran += ok
            ident = ok and r["err"] is None and r["out"] == g["out"]
            same += ident
            nearly = ok and r["err"] is None and same_except_reprs(r["out"], g["out"])
            near += nearly
            if verbose and not ident:
                tag = "FAIL" if not ok else ("REPR" if nearly else "DIFF")
                print(f"--- {tag} {f} block {i}: {g['err'] or ''}")
                if ok and not nearly:
                    print("  zarr  :", r["out"][:400].replace("\n", "\n          "))
                    print("  zarrcy:", g["out"][:400].replace("\n", "\n          "))
    print(f"{n} blocks: {ran} run unchanged, {same} identical output, {near} identical except reprs")


if __name__ == "__main__":
    main()
