"""Run one fuzz target under atheris (libFuzzer), or write the seed corpus.

    python ci/fuzz/run.py TARGET [libFuzzer flags...] CORPUS_DIR [SEED_DIR...]
    python ci/fuzz/run.py --seed          # (re)write ci/fuzz/corpus/<target>/seed-* files
    python ci/fuzz/run.py all [flags...] CORPUS_DIR   # every target in one process
    python ci/fuzz/run.py --list          # target names

Coverage: atheris instruments the *Python* bytecode of zarrcy (``instrument_imports``),
so coverage feedback comes from the Python layer (metadata parsing, codec
orchestration, the sharding codec, indexing).  The compiled Cython kernels run
natively inside the fuzzed process but are not coverage-instrumented (that needs
clang's ``-fsanitize=fuzzer-no-link`` build of the extensions; this machine has only
gcc).  A crash inside a kernel (segfault, abort) is still caught by libFuzzer's
signal handlers and reported as a finding with its input.

Any exception that escapes a target -- i.e. anything that is not a
``zarrcy.errors.ZarrcyError``, or a failed assertion of a target's oracle -- is a
finding: atheris prints it, writes the input to ``-artifact_prefix`` and exits non-zero.
"""

from __future__ import annotations

import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _write_seeds() -> None:
    import targets

    targets.setup()
    n = 0
    for name, items in targets.seeds().items():
        d = os.path.join(HERE, "corpus", name)
        os.makedirs(d, exist_ok=True)
        for b in items:
            fn = os.path.join(d, "seed-" + hashlib.sha1(b).hexdigest()[:16])
            with open(fn, "wb") as f:
                f.write(b)
            n += 1
    print(f"wrote {n} seed inputs under {os.path.join(HERE, 'corpus')}")


def _multiplexed(table: dict) -> object:
    """One process for every target (CI: the import + instrumentation cost, ~4 s, is
    paid once).  The first input byte picks the target (``sorted(table)[b % n]``), the
    rest is that target's input.  Executions per target are written to the JSON file
    ``$ZARRCY_FUZZ_STATS`` at most every 0.2 s (libFuzzer exits without running Python
    exit handlers, so the last 0.2 s may be missing from the split; libFuzzer's own
    ``Done N runs`` line is the exact total)."""
    import json
    import time

    names = sorted(table)
    fns = [table[n] for n in names]
    counts = [0] * len(names)
    stats = os.environ.get("ZARRCY_FUZZ_STATS")
    last = [time.monotonic()]

    def fn(data: bytes) -> None:
        if not data:
            return
        i = data[0] % len(names)
        counts[i] += 1
        if stats is not None:
            now = time.monotonic()
            if now - last[0] > 0.2:
                last[0] = now
                with open(stats, "w") as f:
                    json.dump(dict(zip(names, counts)), f)
        fns[i](data[1:])

    return fn


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--seed":
        _write_seeds()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        import targets

        print("\n".join(targets.TARGETS))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--sorted":  # the "all" target's byte -> name table
        import targets

        print("\n".join(sorted(targets.TARGETS)))
        return
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    name = sys.argv.pop(1)
    import atheris

    with atheris.instrument_imports(include=["zarrcy", "targets"]):
        import importlib
        import pkgutil

        import zarrcy

        # every zarrcy module, including the lazily imported codec modules
        for m in pkgutil.walk_packages(zarrcy.__path__, "zarrcy."):
            if m.name.startswith(("zarrcy.cli", "zarrcy.convert", "zarrcy.__main__")):
                continue
            try:
                importlib.import_module(m.name)
            except ImportError:
                pass
        import targets
    targets.setup()
    if name == "all":
        fn = _multiplexed(targets.TARGETS)
    elif name in targets.TARGETS:
        fn = targets.TARGETS[name]
    else:
        sys.exit(f"unknown target {name!r}; known: all, {', '.join(targets.TARGETS)}")
    atheris.Setup(sys.argv, fn)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
