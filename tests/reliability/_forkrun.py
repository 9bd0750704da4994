"""Run many independent subprocess cases of one test module from a single interpreter.

Several reliability tests run each case in its own process (a memory limit, a peak-RSS
measurement, a crash must not take pytest down).  Starting a fresh interpreter and
importing numpy + zarrcy cost ~1 s a case on the CI host, most of those tests' time.
:func:`run_cases` starts **one** runner process that imports them once, then runs every
case in a **forked child**: still one process per case (its own address space, its own
resource limits, its own peak RSS: ``_peak.py`` resets ``VmHWM`` in the child, so what
the parent held is not counted), executing the same script text as ``python -c SCRIPT
ARGS...`` would, one case after another.  Each case's exit code, stdout and stderr come
back separately, so every parametrized test still passes or fails on its own case.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

RUNNER = r'''
import json, os, sys, tempfile, traceback
import numpy, numcodecs, zarrcy
from zarrcy.storage import MemoryStore
# the modules a case's open/create path needs (imported lazily by zarrcy): load them once
zarrcy.open_array(zarrcy.create_array(MemoryStore(), shape=(2,), dtype="uint8").store, mode="r")
parallel, jobs = json.load(sys.stdin)
results = {}
running = {}


def collect(pid, name, fds):
    _, status = os.waitpid(pid, 0)
    out = []
    for f in fds:
        f.seek(0); out.append(f.read().decode(errors="replace")); f.close()
    results[name] = [os.waitstatus_to_exitcode(status), *out]


for name, script, argv in jobs:
    fds = [tempfile.TemporaryFile() for _ in range(2)]
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.dup2(fds[0].fileno(), 1); os.dup2(fds[1].fileno(), 2)
        sys.argv = ["-c", *argv]
        code = 0
        try:
            exec(compile(script, "<case>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc(); code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    if parallel:
        running[pid] = (name, fds)
    else:
        collect(pid, name, fds)
for pid, (name, fds) in running.items():
    collect(pid, name, fds)
sys.stdout.write(json.dumps(results))
'''


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cases(script: str, cases: dict[str, list[str]], timeout: float, parallel: bool = False) -> dict[str, Result]:
    """``{name: Result}`` of ``python -c script *argv`` for every ``name: argv`` of
    ``cases``, each in a forked child of one runner (see the module docstring): one after
    another, or with ``parallel`` all at once (concurrent writer processes)."""
    jobs = [[name, script, argv] for name, argv in cases.items()]
    r = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps([parallel, jobs]), capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"the case runner failed ({r.returncode}): {r.stderr[-3000:]}")
    return {name: Result(*v) for name, v in json.loads(r.stdout).items()}
