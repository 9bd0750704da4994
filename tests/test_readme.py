"""Every code block of README.md runs as written (issue 14 item 9).

* ```python blocks run one by one, each in a fresh interpreter in a temporary directory
  (twice: a second run must work too, e.g. ``overwrite=True`` where a block writes), unless
  the line before the fence says ``<!-- readme-test: skip: REASON -->`` (remote stores);
* ```console blocks run their ``$ `` commands with bash and must print exactly the lines
  that follow them;
* the ```sh set-up block: ``ci/find_python.sh`` finds an interpreter, and ``.ci/run``
  runs exactly the README's test command.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

import zarrcy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
FENCE = re.compile(r"^```(\w*)\s*$")
SKIP = re.compile(r"^<!-- readme-test: skip: (.+) -->$")


def _blocks() -> list[tuple[int, str, str, str | None]]:
    """(line number, language, code, skip reason) of every fenced block."""
    with open(README, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            skip = SKIP.match(lines[i - 1]) if i else None
            out.append((i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n", skip.group(1) if skip else None))
            i = j + 1
        elif m:  # an unlabelled block (plain text, command sketches): skip to its end
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            i = j + 1
        else:
            i += 1
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(zarrcy.__file__))  # the zarrcy under test
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("ZARRCY_THREADS", "2")
    return env


PY_BLOCKS = [b for b in _blocks() if b[1] == "python"]
CONSOLE_BLOCKS = [b for b in _blocks() if b[1] == "console"]


def test_readme_has_blocks():
    assert len(PY_BLOCKS) >= 5 and CONSOLE_BLOCKS
    assert all(reason.strip() for *_, reason in PY_BLOCKS if reason is not None)


@pytest.mark.parametrize("line,code,skip", [(b[0], b[2], b[3]) for b in PY_BLOCKS], ids=[f"line{b[0]}" for b in PY_BLOCKS])
def test_python_block_runs(tmp_path, line, code, skip):
    if skip:
        pytest.skip(f"README line {line}: {skip}")
    for attempt in (1, 2):  # a second run in the same directory must work too
        r = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=tmp_path, env=_env(),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"README line {line}, run {attempt}:\n{r.stderr}"


def _console_steps(code: str) -> list[tuple[str, list[str]]]:
    """[(command, expected output lines)] from a console transcript."""
    steps: list[tuple[str, list[str]]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            cmd = lines[i][2:]
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            steps.append((cmd, []))
        elif steps:
            steps[-1][1].append(lines[i])
        i += 1
    return steps


@pytest.mark.parametrize("line,code", [(b[0], b[2]) for b in CONSOLE_BLOCKS], ids=[f"line{b[0]}" for b in CONSOLE_BLOCKS])
def test_console_block_prints_what_it_shows(tmp_path, line, code):
    py = shlex.quote(sys.executable)
    for cmd, want in _console_steps(code):
        if cmd.startswith("python "):
            cmd = py + cmd[len("python"):]
        elif cmd.startswith("zarrcy "):
            cmd = f"{py} -m zarrcy" + cmd[len("zarrcy"):]
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"README line {line}: {cmd}\n{r.stderr}"
        assert r.stdout.splitlines() == want, f"README line {line}: {cmd}"


def test_setup_block_and_ci_run_agree():
    sh = [b[2] for b in _blocks() if b[1] == "sh"]
    venv, commands = sh[0], sh[1]
    assert "ci/find_python.sh" in venv
    r = subprocess.run(["bash", os.path.join(ROOT, "ci", "find_python.sh")], capture_output=True, text=True)
    assert r.returncode == 0
    ok = subprocess.run([r.stdout.strip(), "-c", "import sys; assert sys.version_info >= (3, 12)"])
    assert ok.returncode == 0
    test_cmd = commands.splitlines()[1].split("#")[0].strip()
    assert test_cmd == 'pip install ".[test]" && pytest'
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [ln.strip() for ln in f]
    assert test_cmd in ci  # .ci/run runs exactly the README's test command
