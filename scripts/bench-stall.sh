#!/usr/bin/env bash
# Does one partition's disk work stall its node? (docs/benchmarks.md, "One partition's disk work")
#
#   scripts/bench-stall.sh                 # 20 s per mode
#   SECS=60 scripts/bench-stall.sh
#   BROKER=path/to/broker scripts/bench-stall.sh   # that binary, no build (A/B runs)
#   CREATE=6 scripts/bench-stall.sh        # and create 6 topics of 200 partitions on A, 3 s
#                                          # apart, during the large-records run
#   PARTITIONS=4000 SECS=75 scripts/bench-stall.sh   # the loaded topics with 4,000 partitions,
#                                          # long enough for a periodic checkpoint (every 60 s)
#
# Starts two release brokers on free loopback ports (data under target/bench-stall), each its own
# node and controller, on the same machine and disk. A confluent-kafka producer loads broker A's
# topic `load` while Metadata round trips (raw socket, every 2 ms) and one-record acks=1 produces
# to topic `probe` (every 10 ms) run against A and, the same way, against the idle broker B.
# Two modes: `large-records` (256 KiB records, default flush policy: the kernel's writeback and
# segment rolls) and `flush-every-batch` (100-byte records into a topic with flush.messages=1).
# Prints a JSON line per mode, broker and probe (p50/p99/max ms, and how many of that API's
# requests waited over 100 ms for the node or in its decisions, from its metrics). Needs confluent-kafka
# (scripts/test.sh installs it in target/client-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-20}
CREATE=${CREATE:-0}
PARTITIONS=${PARTITIONS:-1}
die() { echo "bench-stall: $*" >&2; exit 1; }
. scripts/client-python.sh
. scripts/broker-start.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
if [ -z "${BROKER:-}" ]; then
  timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
  BROKER=target/release/broker
fi
export BROKER
mkdir -p target/bench-stall
W=$(mktemp -d -p target/bench-stall run.XXXXXX)
A_PID= B_PID=
cleanup() {
  for pid in $A_PID $B_PID; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # Decisions that held a broker's gate over 100 ms, with their call sites (constants.rs,
  # slow_decision_ms): what a probe's stall waited for, when it was the node.
  for b in a b; do grep -h "held the node's" "$W/$b/broker.log" 2>/dev/null | sed "s/^/bench-stall: broker ${b^^}: /" >&2 || true; done
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/a" "$W/b"
# Each broker serves its metrics, so a probe's stall can be told apart: the node's (a request
# waiting for its gate or in its decisions) or the machine's.
port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
AM=127.0.0.1:$(port) BM=127.0.0.1:$(port)
start_broker "$W/a" --metrics-listen "$AM" || die "broker A did not start"; A_PID=$BPID A=$BOOTSTRAP
start_broker "$W/b" --metrics-listen "$BM" || die "broker B did not start"; B_PID=$BPID B=$BOOTSTRAP
for addr in "$A" "$B"; do
  BOOTSTRAP=$addr timeout 120 "$PY" scripts/bench_clients.py topic create load "$PARTITIONS" --config max.message.bytes=1048576 >&2 || die "create load on $addr"
  BOOTSTRAP=$addr timeout 120 "$PY" scripts/bench_clients.py topic create flushed "$PARTITIONS" --config flush.messages=1 >&2 || die "create flushed on $addr"
  BOOTSTRAP=$addr timeout 120 "$PY" scripts/bench_clients.py topic create probe 1 >&2 || die "create probe on $addr"
done
CREATOR=
if [ "$CREATE" -gt 0 ]; then
  # Topics created on the loaded broker while it writes: opening 200 replicas creates 800 files,
  # and their creation's syncfs flushes every dirty page of the file system (docs/benchmarks.md,
  # "One partition's disk work").
  ( for i in $(seq 1 "$CREATE"); do sleep 3; BOOTSTRAP=$A timeout 120 "$PY" scripts/bench_clients.py topic create "created-$i" 200 >&2 || exit 1; done ) & CREATOR=$!
fi
timeout $(( SECS + 300 )) "$PY" scripts/bench_stall.py run --loaded "$A" --other "$B" --topic load --partitions "$PARTITIONS" --record-bytes 262144 --secs "$SECS" --mode large-records --loaded-metrics "$AM" --other-metrics "$BM" || die "large-records run failed"
[ -z "$CREATOR" ] || wait "$CREATOR" || die "creating topics on $A failed"
timeout $(( SECS + 300 )) "$PY" scripts/bench_stall.py run --loaded "$A" --other "$B" --topic flushed --partitions "$PARTITIONS" --record-bytes 100 --secs "$SECS" --mode flush-every-batch --loaded-metrics "$AM" --other-metrics "$BM" || die "flush-every-batch run failed"
