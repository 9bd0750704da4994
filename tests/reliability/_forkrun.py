"""Child processes of the reliability suite without a fresh interpreter each.

Several reliability tests run code in its own process (a memory limit, a peak-RSS
measurement, a writer killed with SIGKILL, concurrent writer processes).  Starting a
fresh interpreter and importing numpy + zarrcy cost ~1 s a process on the CI host, most
of those tests' time.  :func:`server` starts **one** runner per pytest process that
imports them once (the zarrcy under test: the runner's ``sys.path`` starts with the
directory pytest imported it from) and then **forks** a child per request.  A child is
still its own process, as with ``subprocess.Popen([sys.executable, *argv])``: its own
pid (a SIGKILL hits only it), address space, resource limits and peak RSS (``_peak.py``
resets ``VmHWM`` in the child, so what the runner held is not counted), its own stdin /
stdout pipes, and it runs ``python -c SCRIPT ARGS...`` or ``python FILE ARGS...`` the
same way (``sys.argv``, ``__name__ == "__main__"``, ``sys.path[0]``, exit code of
``SystemExit`` or of an uncaught exception).  The runner itself runs nothing but the
warm-up below, and holds no thread of zarrcy's when it forks.

What a child sees differently from a fresh interpreter: modules are imported already,
so environment variables read at import (``ZARRCY_THREADS`` ...) keep the values they
had when this module was imported (at collection); ``os.environ`` itself is the test
process's at the start of the child (plus ``env=``).  Tests whose point is a fresh
interpreter (an environment variable read at import, spawn, forkserver) keep starting
one.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import zarrcy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(zarrcy.__file__)))
ENV = dict(os.environ)  # at collection: what the runner's imports read, before any test changed it

RUNNER = r'''
import json, os, runpy, select, signal, socket, sys, traceback, warnings
root = sys.argv[1]
sys.path[:] = [root] + [p for p in sys.path if p not in ("", root)]
import numpy, numcodecs, zarrcy
from zarrcy.storage import MemoryStore
assert os.path.dirname(os.path.dirname(os.path.abspath(zarrcy.__file__))) == root, zarrcy.__file__
# the modules a child's open/create path needs (imported lazily by zarrcy): load them once
zarrcy.open_array(zarrcy.create_array(MemoryStore(), shape=(2,), dtype="uint8").store, mode="r")
sock = socket.socket(fileno=int(sys.argv[2]))
base_path, base_filters = sys.path[:], warnings.filters[:]
# numpy's BLAS may hold idle threads: its own at-fork handlers make the fork safe
warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
children = {}


def child(req, fds):
    code = 1
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i, inheritable=True)
        for fd in fds:
            os.close(fd)
        sock.close()
        for fd in children.values():
            os.close(fd)
        warnings.filters[:] = base_filters
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        argv = req["argv"]
        if argv[0] == "-c":
            sys.argv, sys.path[:] = ["-c", *argv[2:]], ["", *base_path]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            sys.argv, sys.path[:] = list(argv), [os.path.dirname(os.path.abspath(argv[0])), *base_path]
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(code)


while True:
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 22, 3)
    if not msg:
        break
    req = json.loads(msg)
    if req["op"] == "start":
        sys.stdout.flush(); sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(req, fds)
        for fd in fds:
            os.close(fd)
        children[pid] = os.pidfd_open(pid)
        reply = {"pid": pid}
    else:  # "wait"
        pid, timeout = req["pid"], req["timeout"]
        code = None
        poll = select.poll()
        poll.register(children[pid], select.POLLIN)
        if poll.poll(timeout * 1000):
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            os.close(children.pop(pid))
        reply = {"code": code}
    sock.send(json.dumps(reply).encode())
for pid in children:  # the test process went away: leave no child behind
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
'''


class ForkServer:
    """The runner process (see the module docstring); :meth:`start` forks a child."""

    def __init__(self) -> None:
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, "-c", RUNNER, ROOT, str(theirs.fileno())],
                                      pass_fds=[theirs.fileno()], env=ENV, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=self._log)
        theirs.close()
        self._lock = threading.Lock()

    def ask(self, req: dict, fds: tuple[int, ...] = ()) -> dict:
        with self._lock:
            socket.send_fds(self._sock, [json.dumps(req).encode()], list(fds))
            msg = self._sock.recv(1 << 16)
        if not msg:
            self._log.seek(0)
            raise AssertionError(f"the fork server died: {self._log.read().decode(errors='replace')[-3000:]}")
        return json.loads(msg)

    def start(self, argv: list, env: dict[str, str] | None = None, cwd: str | None = None) -> Child:
        """A child running like ``python *argv`` (``["-c", SCRIPT, *args]`` or ``[FILE,
        *args]``), with its stdin and stdout connected to pipes, stderr to a file, and this
        process's environment updated with ``env`` (variables read at import excepted)."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        with tempfile.TemporaryFile() as f:
            err = os.dup(f.fileno())  # a plain descriptor: no file object to close
        try:
            pid = self.ask({"op": "start", "argv": [str(a) for a in argv], "env": {**os.environ, **(env or {})},
                            "cwd": cwd or os.getcwd()}, (stdin_r, stdout_w, err))["pid"]
        except BaseException:
            for fd in (stdin_w, stdout_r, err):
                os.close(fd)
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        return Child(self, pid, stdin_w, stdout_r, err)

    def close(self) -> None:
        self._sock.close()
        self._proc.wait(60)
        self._log.close()


_SERVER: ForkServer | None = None


def server() -> ForkServer:
    """The runner of this pytest process (started on first use, stopped at exit)."""
    global _SERVER
    if _SERVER is None:
        _SERVER = ForkServer()
        atexit.register(_SERVER.close)
    return _SERVER


class Child:
    """A forked child: like ``subprocess.Popen`` with ``stdin=PIPE, stdout=PIPE`` (text);
    :meth:`communicate` (or :meth:`close`) closes the pipes."""

    def __init__(self, server: ForkServer, pid: int, stdin: int, stdout: int, err: int) -> None:
        self.pid, self._server = pid, server
        self._fds = {"stdin": stdin, "stdout": stdout, "err": err}
        self._buf, self._err_text = b"", ""
        self.returncode: int | None = None

    def readline(self, timeout: float = 120) -> str:
        """The child's next line of stdout (``""`` at its end)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf and self._read(deadline, timeout):
            pass
        line, nl, self._buf = self._buf.partition(b"\n")
        return (line + nl).decode()

    def _read(self, deadline: float, timeout: float) -> bool:
        fd = self._fds["stdout"]
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        if not poll.poll(max(0.0, deadline - time.monotonic()) * 1000):
            self.kill()
            self.wait()
            raise subprocess.TimeoutExpired(f"child {self.pid}", timeout)
        data = os.read(fd, 1 << 16)
        self._buf += data
        return bool(data)

    def send(self, text: str) -> None:
        """Write ``text`` to the child's stdin."""
        os.write(self._fds["stdin"], text.encode())

    def poll(self) -> int | None:
        return self.returncode if self.returncode is not None else self._wait(0)

    def wait(self, timeout: float = 600) -> int:
        code = self.returncode if self.returncode is not None else self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"child {self.pid}", timeout)
        return code

    def _wait(self, timeout: float) -> int | None:
        code = self._server.ask({"op": "wait", "pid": self.pid, "timeout": timeout})["code"]
        if code is not None:
            self.returncode = code
        return code

    def kill(self) -> None:
        """SIGKILL (a no-op once it was reaped: the pid is not ours any more)."""
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)

    @property
    def stderr(self) -> str:
        """What the child wrote to stderr so far."""
        if "err" in self._fds:
            self._err_text = os.pread(self._fds["err"], 1 << 24, 0).decode(errors="replace")
        return self._err_text

    def close(self) -> None:
        """Close the pipes (the child sees EOF on stdin; its stdout writes fail)."""
        self._err_text = self.stderr
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def communicate(self, input: str = "", timeout: float = 120) -> tuple[str, str]:
        """Send ``input``, close stdin, read stdout to its end, wait and close: (rest of
        stdout, stderr).  Past ``timeout`` the child is killed and TimeoutExpired raised."""
        deadline = time.monotonic() + timeout
        try:
            try:
                self.send(input)
            except BrokenPipeError:
                pass
            os.close(self._fds.pop("stdin"))
            while self._read(deadline, timeout):
                pass
            self.wait(max(0.0, deadline - time.monotonic()))
        finally:
            self.close()
        out, self._buf = self._buf.decode(errors="replace"), b""
        return out, self.stderr


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def _finish(child: Child, deadline: float) -> Result:
    out, err = child.communicate(timeout=deadline - time.monotonic())
    return Result(child.wait(), out, err)


def run(argv: list, timeout: float) -> Result:
    """Like ``subprocess.run([sys.executable, *argv], capture_output=True, text=True,
    timeout=timeout)``, in a forked child (TimeoutExpired after killing it)."""
    return _finish(server().start(argv), time.monotonic() + timeout)


def run_cases(script: str, cases: dict[str, list[str]], timeout: float, parallel: bool = False) -> dict[str, Result]:
    """``{name: Result}`` of ``python -c script *argv`` for every ``name: argv`` of
    ``cases``, each in a forked child (see the module docstring): one after another, or
    with ``parallel`` all started before any is waited for (concurrent writer processes)."""
    deadline = time.monotonic() + timeout
    if not parallel:
        return {name: _finish(server().start(["-c", script, *argv]), deadline) for name, argv in cases.items()}
    started = {name: server().start(["-c", script, *argv]) for name, argv in cases.items()}
    return {name: _finish(child, deadline) for name, child in started.items()}
