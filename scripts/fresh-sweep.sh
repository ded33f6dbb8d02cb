#!/usr/bin/env bash
# The nightly fresh-seed sweep (docs/scenarios.md, "Fresh seeds, every night"). CI stays deterministic on pinned seeds;
# this sweeps every scenario folder over seeds nobody has run before, as FoundationDB's and
# TigerBeetle's nightly runs do, so a bug that pinned seeds miss is found by a new seed.
#
#   scripts/fresh-sweep.sh                      # today's seeds, 45 min budget
#   scripts/fresh-sweep.sh --base 7000 --seeds 300 --budget-mins 20
#
# The seed range starts at --base, by default drawn from the UTC date (YYYYMMDD * 1000, e.g.
# 20261203000..20261203000+N): a new range every day, the same one all day (so a failure can be
# swept again), far above every seed the suite and docs pin (all below 1,000,000). Every
# scenario under scenarios/ runs over the range but scenarios/bench (benchmarks, not fault
# tests), seed-major, until --budget-mins of wall time: no run starts after that. scenarios/slow
# (runs of about 50 s each) gets its own sixth of the budget, after the others' five sixths, so
# it neither eats the budget nor goes unswept; scenarios/anomalies (Kafka's transaction
# anomalies under the classic protocol, which some seed must show) runs again with KIP-890 on
# (--transaction-version 2, where none may) in a tenth. Failing seeds' traces go to --out (default
# target/fresh-sweep/<base>/traces), each FAIL line names every checker that fired and the
# command that reproduces it, and the JSON-lines summaries (one line per run, then one for the
# sweep) are <out>/summary.jsonl, <out>/slow-summary.jsonl and <out>/kip890-summary.jsonl. Exit 0 when nothing failed, 1
# when a run failed, 2 on a usage or build error.
set -euo pipefail
cd "$(dirname "$0")/.."

base=$(( $(date -u +%Y%m%d) * 1000 ))
seeds=1000
budget_mins=45
jobs=$(nproc 2>/dev/null || echo 2)
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --budget-mins) budget_mins=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "fresh-sweep: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
out=${out:-target/fresh-sweep/$base}
mkdir -p "$out"

# Build first, so the budget is spent on runs.
cargo sim --help >/dev/null || exit 2
range="$base..$((base + seeds))"
echo "fresh sweep: seeds $range, budget ${budget_mins} min, $jobs jobs, output in $out"
dirs=()
for d in scenarios/*/; do
  case "$d" in scenarios/bench/|scenarios/slow/) ;; *) dirs+=("$d") ;; esac
done
budget_secs=$((budget_mins * 60))
slow_secs=$((budget_secs / 6))
kip890_secs=$((budget_secs / 10))
set +e
cargo sim sweep "${dirs[@]}" --seeds "$range" --jobs "$jobs" --budget-secs $((budget_secs - slow_secs - kip890_secs)) \
  --traces "$out/traces" --summary "$out/summary.jsonl" 2>&1 | tee "$out/sweep.log"
status=${PIPESTATUS[0]}
cargo sim sweep scenarios/slow --seeds "$range" --jobs "$jobs" --budget-secs "$slow_secs" \
  --traces "$out/traces" --summary "$out/slow-summary.jsonl" 2>&1 | tee -a "$out/sweep.log"
slow_status=${PIPESTATUS[0]}
cargo sim sweep scenarios/anomalies --transaction-version 2 --seeds "$range" --jobs "$jobs" --budget-secs "$kip890_secs" \
  --traces "$out/traces" --summary "$out/kip890-summary.jsonl" 2>&1 | tee -a "$out/sweep.log"
kip890_status=${PIPESTATUS[0]}
set -e
[ "$slow_status" -ge "$kip890_status" ] || slow_status=$kip890_status
echo "fresh sweep: summaries in $out/summary.jsonl and $out/slow-summary.jsonl, log in $out/sweep.log"
[ "$status" -ge "$slow_status" ] || status=$slow_status
exit "$status"
