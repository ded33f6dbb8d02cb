#!/usr/bin/env bash
# Restart time as the metadata log's history grows (docs/benchmarks.md, issue 10 item 2): one
# broker (its own lone voter) creates a topic of PARTS partitions, then is stopped with SIGTERM
# and started again RESTARTS times; each start is timed until every partition has a leader and
# answers ListOffsets, and the metadata directory is measured after it (bytes of segments,
# snapshot files). Every restart appends thousands of records (a new registration, then every
# partition's leader moved back to it), so without snapshots each start replays more.
#
#   scripts/bench-metadata-restart.sh                         # PARTS=4000 RESTARTS=8
#   SNAP=1000000000000 scripts/bench-metadata-restart.sh      # snapshots never due: as before them
#   SNAP=1048576 PARTS=1000 scripts/bench-metadata-restart.sh
#
# Prints one JSON line per restart (kind "restart": n, secs, log_bytes, snapshots).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-4000}; RESTARTS=${RESTARTS:-8}; SNAP=${SNAP:-}
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
for i in $(seq "$RESTARTS"); do
  stop_broker
  t0=$(date +%s%N)
  start_broker "$W" "${flags[@]}" || die "restart $i"
  timeout 300 "$PY" "$here" serving t "$PARTS" --tag "restart $i" >&2 || die "serving after restart $i"
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))e-3
  log_bytes=$(cat "$meta"/*.log | wc -c)
  snaps=$(ls "$meta" | grep -c '\.checkpoint$' || true)
  echo "{\"kind\":\"restart\",\"n\":$i,\"partitions\":$PARTS,\"snap_bytes\":\"${SNAP:-default}\",\"secs\":$secs,\"log_bytes\":$log_bytes,\"snapshots\":$snaps}"
done
