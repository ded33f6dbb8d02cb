#!/usr/bin/env bash
# Restart time as the metadata log's history grows (docs/benchmarks.md, issue 10 item 2): one
# broker (its own lone voter) creates a topic of PARTS partitions; then, ROUNDS times, it
# creates and deletes another topic of HPARTS partitions HISTORY times (about 0.5 MB of metadata
# records each) and is stopped with SIGTERM and started again, the start timed until every
# partition of the first topic has a leader and answers ListOffsets. After each start the
# metadata directory is measured (bytes of segments, snapshot files). Without snapshots every
# start replays the whole history; with them, the newest snapshot and the tail after it.
#
#   scripts/bench-metadata-restart.sh                         # PARTS=4000 HPARTS=2000 ROUNDS=3 HISTORY=6
#   SNAP=1000000000000 scripts/bench-metadata-restart.sh      # snapshots never due: as before them
#   SNAP=1048576 PARTS=1000 scripts/bench-metadata-restart.sh
#
# Prints one JSON line per restart (kind "restart": n, secs, log_bytes, snapshots).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-4000}; HPARTS=${HPARTS:-2000}; ROUNDS=${ROUNDS:-3}; HISTORY=${HISTORY:-6}; SNAP=${SNAP:-}
here=scripts/bench_clients.py
die() { echo "bench-metadata-restart: $*" >&2; exit 1; }
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
. scripts/broker-start.sh
timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
flags=()
[ -z "$SNAP" ] || flags=(--metadata-log-max-record-bytes-between-snapshots "$SNAP")
mkdir -p target/bench-metadata
W=$(mktemp -d -p target/bench-metadata run.XXXXXX)
trap 'stop_broker; rm -rf "$W"' EXIT
start_broker "$W" "${flags[@]}" || die "start"
timeout 300 "$PY" "$here" topic create t "$PARTS" >&2 || die "create t"
timeout 300 "$PY" "$here" serving t "$PARTS" --tag created >&2 || die "serving after create"
meta="$W/data/__cluster_metadata-0"
for i in $(seq "$ROUNDS"); do
  for k in $(seq "$HISTORY"); do
    timeout 300 "$PY" "$here" topic create "h$i-$k" "$HPARTS" >&2 || die "create h$i-$k"
    timeout 300 "$PY" "$here" topic delete "h$i-$k" >&2 || die "delete h$i-$k"
  done
  stop_broker
  t0=$(date +%s%N)
  start_broker "$W" "${flags[@]}" || die "restart $i"
  timeout 300 "$PY" "$here" serving t "$PARTS" --tag "restart $i" >&2 || die "serving after restart $i"
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))e-3
  log_bytes=$(cat "$meta"/*.log | wc -c)
  snaps=$(ls "$meta" | grep -c '\.checkpoint$' || true)
  echo "{\"kind\":\"restart\",\"n\":$i,\"partitions\":$PARTS,\"snap_bytes\":\"${SNAP:-default}\",\"secs\":$secs,\"log_bytes\":$log_bytes,\"snapshots\":$snaps}"
done
