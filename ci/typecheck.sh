#!/usr/bin/env bash
# Type check (issue 15; CONVENTIONS.md rules 8 and 11), at 0 errors:
#  1. mypy over zarrcy/ (configuration: pyproject.toml [tool.mypy]);
#  2. mypy.stubtest: every compiled kernel's .pyi against the built module, so a stub
#     cannot drift from its .pyx (names, parameters, defaults).
# Runs with the active environment's python (as .ci/run's venv; override: PYTHON=...),
# which needs zarrcy installed (built kernels) and mypy ("pip install .[test]").
# stubtest runs with -P: the kernels are imported from the installed package, never from
# this source tree (a clean clone has no compiled modules here); the stubs it checks
# are this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}

echo "== mypy"
"$PY" -m mypy

echo "== stubtest (zarrcy/_kernels/*.pyi)"
mods=()
for stub in zarrcy/_kernels/*.pyi; do
  name=$(basename "$stub" .pyi)
  mods+=("zarrcy._kernels.$name")
done
# every compiled kernel module has a stub (a .pyx without one would type as missing)
for pyx in zarrcy/_kernels/*.pyx; do
  name=$(basename "$pyx" .pyx)
  if [ ! -f "zarrcy/_kernels/$name.pyi" ]; then
    echo "zarrcy/_kernels/$name.pyx: no $name.pyi stub beside it" >&2
    exit 1
  fi
done
# --ignore-unused-allowlist: which Cython artefacts stubtest reports varies by mypy version
"$PY" -P -m mypy.stubtest --concise --ignore-unused-allowlist \
  --allowlist ci/stubtest_allowlist.txt "${mods[@]}"
echo "typecheck: ok"
