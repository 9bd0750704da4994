#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter (zarrcy's floor), or fail.
# Looks at $ZARRCY_PYTHON, python3.13/python3.12 on PATH, pyenv versions, then python3.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }
cands=()
[ -n "${ZARRCY_PYTHON:-}" ] && cands+=("$ZARRCY_PYTHON")
for v in python3.13 python3.12; do command -v "$v" >/dev/null 2>&1 && cands+=("$(command -v "$v")"); done
for root in "${PYENV_ROOT:-$HOME/.pyenv}" /root/.pyenv; do
  for d in "$root"/versions/3.12* "$root"/versions/3.13*; do
    [ -x "$d/bin/python3" ] && cands+=("$d/bin/python3")
  done
done
command -v python3 >/dev/null 2>&1 && cands+=("$(command -v python3)")
for c in "${cands[@]}"; do
  if ok "$c"; then echo "$c"; exit 0; fi
done
echo "no Python >= 3.12 found (set ZARRCY_PYTHON)" >&2
exit 1
