#!/usr/bin/env bash
# Cost as partitions grow (docs/benchmarks.md, issue 13): for each count in PARTS, one broker
# creates a topic of that many partitions (CreateTopics until Metadata lists them all),
# answers a full Metadata request for it, and takes N keyed 100-byte records from
# confluent-kafka with acks=all spread over every partition; the broker's CPU is divided by
# the batches it stored (counted from its segment files: batches shrink as partitions grow,
# so CPU per batch, not per record, is what must stay flat). Then, with every topic in place,
# SIGTERM (time to exit, every partition flushed and checkpointed), a restart after a clean
# stop, and a restart after SIGKILL, each timed until every partition of the largest topic
# has a leader and answers ListOffsets.
#
#   scripts/bench-scale.sh                          # PARTS="1 100 1000 4000", N=500000
#   PARTS="1 4000" N=200000 scripts/bench-scale.sh
#   BROKER=path/to/broker scripts/bench-scale.sh    # that binary, nothing built (A/B runs)
#   BATCH=10 LINGER=1000 scripts/bench-scale.sh     # every batch of the same size (below)
#   PACE=57000 PARTS=1 BATCH=10 LINGER=1000 scripts/bench-scale.sh   # records/s at most, as a slower client sends
#
# librdkafka fills larger batches when the partitions are many (its queues per partition wait
# longer for their turn), so with its defaults the records per batch differ between the counts.
# BATCH (batch.num.messages) with a LINGER long enough for every batch to fill makes them the
# same: N/BATCH batches whatever the partition count, and CPU per batch compares like with like.
#
# Prints one JSON line per step (kinds: create, metadata, produce, batches, stop, serving).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-"1 100 1000 4000"}; N=${N:-500000}; BATCH=${BATCH:-0}; LINGER=${LINGER:-5}; PACE=${PACE:-0}
here=scripts/bench_clients.py
die() { echo "bench-scale: $*" >&2; exit 1; }
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
. scripts/broker-start.sh
if [ -z "${BROKER:-}" ]; then
  timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
fi
mkdir -p target/bench-scale
W=$(mktemp -d -p target/bench-scale run.XXXXXX)
trap 'stop_broker; rm -rf "$W"' EXIT
start_broker "$W" || die "start"
largest=0
for n in $PARTS; do
  t0=$(date +%s%N)
  timeout 300 "$PY" "$here" topic create "t$n" "$n" >&2 || die "create t$n"
  echo "{\"kind\":\"create\",\"partitions\":$n,\"secs\":$(( ($(date +%s%N) - t0) / 1000000 ))e-3}"
  "$PY" - "$n" <<'PY'
import json, os, sys, time
from confluent_kafka.admin import AdminClient
n = int(sys.argv[1])
a = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]})
a.list_topics(timeout=10)
t0 = time.perf_counter()
md = a.list_topics(timeout=30)
print(json.dumps({"kind": "metadata", "partitions": n, "listed": sum(len(t.partitions) for t in md.topics.values()), "secs": round(time.perf_counter() - t0, 3)}))
PY
  timeout 600 "$PY" "$here" produce --topic "t$n" --n "$N" --acks all --keys 100000 --batch-records "$BATCH" --linger "$LINGER" --pace "$PACE" --tag "p$n" --broker-pid "$BPID" --timeout 500 || die "produce t$n"
  "$PY" "$here" batches "$W/data" "t$n" --tag "p$n" || die "count batches of t$n"
  largest=$n
done
stop_broker
echo "{\"kind\":\"stop\",\"how\":\"SIGTERM\",\"secs\":$STOP_SECS}"
restart() {  # $1: what happened before; prints the time from exec to every partition serving
  local t0
  t0=$(date +%s%N)
  start_broker "$W" || die "restart after $1"
  timeout 300 "$PY" "$here" serving "t$largest" "$largest" --tag "after $1" >&2 || die "serving after $1"
  echo "{\"kind\":\"restart\",\"after\":\"$1\",\"partitions\":$largest,\"secs\":$(( ($(date +%s%N) - t0) / 1000000 ))e-3}"
}
restart "a clean stop"
kill -KILL "$BPID"; wait "$BPID" 2>/dev/null || true; BPID=
restart "SIGKILL"
