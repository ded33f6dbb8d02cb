#!/usr/bin/env bash
# Transactions against idempotent produce, and read_committed against read_uncommitted
# (docs/benchmarks.md, "Transactions"), with confluent-kafka on one release broker.
#
#   scripts/bench-transactions.sh              # N=200000 records of 100 bytes, RUNS=3
#   N=50000 TXN=10 RUNS=1 scripts/bench-transactions.sh
#   BROKER=path/to/broker SEEDLOG=path/to/seedlog scripts/bench-transactions.sh   # no build (A/B runs)
#   BROKER_FLAGS="--transaction-partition-verification-enable false" scripts/bench-transactions.sh   # A/B of KIP-890 part 1
#
# Per run, on a fresh broker (data under target/bench-transactions), one partition each:
#   idempotent     N records produced by an idempotent producer (acks=all), as fast as it goes
#   transactional  the same N records in transactions of TXN (100) records, each committed
#                  (init_transactions first, not counted)
#   consume        the transactional topic read to its end with read_uncommitted and with
#                  read_committed (the markers and the last stable offset in the way)
# Prints one JSON line per run and a summary of medians [min–max]. Needs confluent-kafka
# (scripts/test.sh installs it in target/client-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}; TXN=${TXN:-100}; RUNS=${RUNS:-3}
die() { echo "bench-transactions: $*" >&2; exit 1; }
. scripts/client-python.sh
. scripts/broker-start.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
release_bins || die "cargo build failed"
mkdir -p target/bench-transactions
W=$(mktemp -d -p target/bench-transactions run.XXXXXX)
cleanup() { stop_broker; rm -rf "$W"; }
trap cleanup EXIT
RESULTS=$W/results.jsonl
for run in $(seq "$RUNS"); do
  mkdir -p "$W/$run"
  # shellcheck disable=SC2086 # BROKER_FLAGS is a list of flags
  start_broker "$W/$run" ${BROKER_FLAGS:-} || die "the broker did not start"
  "$PY" scripts/bench_transactions.py run --bootstrap "$BOOTSTRAP" --n "$N" --txn "$TXN" >>"$RESULTS" || die "run $run failed"
  tail -n 1 "$RESULTS"
  stop_broker
done
"$PY" scripts/bench_transactions.py summarize "$RESULTS"
