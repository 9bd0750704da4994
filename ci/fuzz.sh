#!/usr/bin/env bash
# Coverage-guided fuzzing of zarrcy's decoders and parsers (atheris / libFuzzer).
#
#   bash ci/fuzz.sh --seconds 45          # CI: every target, 45 s in total (default)
#   bash ci/fuzz.sh --minutes 30          # on demand: 30 minutes in total
#   bash ci/fuzz.sh --minutes 10 --target codec_sharding --target metadata
#   bash ci/fuzz.sh --seconds 60 --keep-corpus   # add new interesting inputs to ci/fuzz/corpus/
#
# Up to 300 s with no --target: all targets run in ONE process (instrumenting zarrcy
# costs ~4 s per process), the first input byte choosing the target.  Longer runs or
# --target: one process per target, the budget split evenly (at least 1 s each;
# start-up is taken out of the budget).  Each target starts
# from ci/fuzz/corpus/<target>/ and ci/fuzz/reproducers/<target>/.  Any crash, hang
# (> 10 s on one input), memory blow-up (> 2 GB RSS) or exception outside zarrcy's
# error hierarchy is a finding: the input is saved under ci/fuzz/findings/ and the
# script exits 1.  To keep a finding as a regression test, fix the bug and move the
# file to ci/fuzz/reproducers/<target>/ (tests/reliability/test_fuzz_corpus.py replays it).
#
# Python: $ZARRCY_PYTHON if set, else the active venv's python, else ci/find_python.sh.
# Needs atheris (pip install '.[fuzz]').
set -uo pipefail
cd "$(dirname "$0")/.."
total=45
targets=()
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) total="$2"; shift 2 ;;
    --minutes) total=$(( $2 * 60 )); shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --keep-corpus) keep=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ -n "${ZARRCY_PYTHON:-}" ]; then PY="$ZARRCY_PYTHON"
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then PY="$VIRTUAL_ENV/bin/python"
else PY=$(bash ci/find_python.sh) || exit 2
fi
if ! "$PY" -c 'import atheris, zarrcy' 2>/dev/null; then
  echo "fuzz.sh: $PY cannot import atheris and zarrcy (pip install '.[fuzz]')" >&2
  exit 2
fi
# CI-sized runs of every target share one process; longer or selected runs get one each
multiplex=0
if [ ${#targets[@]} -eq 0 ] && [ "$total" -le 300 ]; then multiplex=1; fi
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <("$PY" ci/fuzz/run.py --list)
fi
n=${#targets[@]}
startup=2   # seconds of interpreter + import per target, taken out of the budget
per=$(( (total - n * startup) / n ))
[ "$per" -lt 1 ] && per=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=ci/fuzz/findings
mkdir -p "$findings"
failed=0
sum_runs=0

if [ "$multiplex" = 1 ]; then
  # every target in one process (start-up paid once); first input byte = target
  mapfile -t names < <("$PY" ci/fuzz/run.py --sorted)
  mkdir -p "$work/all" "$work/seeds"
  for i in "${!names[@]}"; do
    t=${names[$i]}
    for f in "ci/fuzz/corpus/$t"/* "ci/fuzz/reproducers/$t"/*; do
      [ -f "$f" ] || continue
      { printf "\\$(printf '%03o' "$i")"; cat "$f"; } > "$work/seeds/$t-$(basename "$f")"
    done
  done
  fuzz_time=$(( total - 5 )); [ "$fuzz_time" -lt 1 ] && fuzz_time=1
  start=$(date +%s)
  ZARRCY_FUZZ_STATS="$work/stats.json" timeout --signal=KILL $(( fuzz_time + 60 )) "$PY" ci/fuzz/run.py all \
      -max_total_time="$fuzz_time" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$findings/all-" \
      "$work/all" "$work/seeds" >"$work/all.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(grep -Eo 'Done [0-9]+ runs' "$work/all.log" | grep -Eo '[0-9]+' | tail -1)
  [ -z "$runs" ] && runs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$work/all.log" | grep -Eo '[0-9]+$' | tail -1)
  runs=${runs:-0}
  printf '%-20s %10s\n' target runs
  if [ -f "$work/stats.json" ]; then
    "$PY" -c 'import json,sys; [print(f"{k:<20} {v:>10}") for k, v in json.load(open(sys.argv[1])).items()]' "$work/stats.json"
  fi
  echo "total executions: $runs over ${#names[@]} targets in $secs s (one process)"
  if [ "$keep" = 1 ]; then  # split new inputs back into the per-target corpora
    for f in "$work/all"/*; do
      [ -f "$f" ] || continue
      b=$(head -c1 "$f" | od -An -tu1 | tr -d ' '); [ -z "$b" ] && continue
      t=${names[$(( b % ${#names[@]} ))]}
      tail -c +2 "$f" > "ci/fuzz/corpus/$t/$(basename "$f")"
    done
  fi
  if [ "$rc" -ne 0 ]; then
    for f in "$findings"/all-*; do
      [ -f "$f" ] || continue
      b=$(head -c1 "$f" | od -An -tu1 | tr -d ' ')
      t=${names[$(( ${b:-0} % ${#names[@]} ))]}
      tail -c +2 "$f" > "$findings/$t-$(basename "$f" | sed 's/^all-//')"
      echo "finding for target $t: $findings/$t-$(basename "$f" | sed 's/^all-//')"
      rm -f "$f"
    done
    cp "$work/all.log" "$findings/all.log"
    grep -v '^INFO: Instrumenting' "$work/all.log" | tail -40
    echo "fuzz.sh: FINDING (exit $rc); inputs saved under $findings/" >&2
    exit 1
  fi
  exit 0
fi

printf '%-20s %10s %8s  %s\n' target runs seconds result
summary=()
for t in "${targets[@]}"; do
  mkdir -p "ci/fuzz/corpus/$t" "ci/fuzz/reproducers/$t" "$work/$t"
  if [ "$keep" = 1 ]; then corpus=("ci/fuzz/corpus/$t"); else corpus=("$work/$t" "ci/fuzz/corpus/$t"); fi
  mkdir -p "$findings"
  start=$(date +%s)
  timeout --signal=KILL $(( per + 60 )) "$PY" ci/fuzz/run.py "$t" \
      -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$findings/$t-" \
      "${corpus[@]}" "ci/fuzz/reproducers/$t" >"$work/$t.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(grep -Eo 'Done [0-9]+ runs' "$work/$t.log" | grep -Eo '[0-9]+' | tail -1)
  [ -z "$runs" ] && runs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$work/$t.log" | grep -Eo '[0-9]+$' | tail -1)
  runs=${runs:-0}
  sum_runs=$(( sum_runs + runs ))
  if [ "$rc" -eq 0 ]; then res=ok; else res="FINDING (exit $rc)"; failed=1; fi
  printf '%-20s %10s %8s  %s\n' "$t" "$runs" "$secs" "$res"
  if [ "$rc" -ne 0 ]; then
    cp "$work/$t.log" "$findings/$t.log"
    echo "---- $t: last lines of the log (full log: $findings/$t.log) ----"
    grep -v '^INFO: Instrumenting' "$work/$t.log" | tail -40
    echo "----"
  fi
done
echo "total executions: $sum_runs over $n targets"
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: findings saved under $findings/" >&2
  exit 1
fi
exit 0
