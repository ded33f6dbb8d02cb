#!/usr/bin/env bash
# Produce latency while the log cleaner works, next to idle (docs/benchmarks.md, issue 9).
#
#   scripts/bench-cleaning.sh                       # 512 MiB compacted while measuring
#   FILL_MIB=1024 CLEANER_RATE=50000000 scripts/bench-cleaning.sh
#   BROKER=path/to/broker scripts/bench-cleaning.sh  # that binary, no build (A/B runs)
#
# Starts the release broker on a free loopback port (data under target/), fills topic `busy`
# with FILL_MIB of keyed 200-byte records (10% of them live) under cleanup.policy=delete, so
# nothing cleans it yet; measures acks=all latency at 1,000 records/s on topic `lat` (idle);
# then switches `busy` to cleanup.policy=compact with incremental_alter_configs and measures the
# same latency while the cleaner compacts it, and reports when the pass started and ended
# against the measured window. CLEANER_RATE sets log.cleaner.io.max.bytes.per.second
# (default: no limit, Kafka's default). Environment as scripts/bench-broker.sh: PY, LAT_SECS.
set -euo pipefail
cd "$(dirname "$0")/.."
FILL_MIB=${FILL_MIB:-512}; LAT_SECS=${LAT_SECS:-10}; CLEANER_RATE=${CLEANER_RATE:-}; BROKER=${BROKER:-}
here=scripts/bench_clients.py
die() { echo "bench-cleaning: $*" >&2; exit 1; }
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"

if [ -z "$BROKER" ]; then
  timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
  BROKER=target/release/broker
fi
mkdir -p target/bench-cleaning
W=$(mktemp -d -p target/bench-cleaning run.XXXXXX)
BPID=
cleanup() {
  [ -z "$BPID" ] || { kill -TERM "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null || true; }
  rm -rf "$W"
}
trap cleanup EXIT
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export BOOTSTRAP=127.0.0.1:$PORT
rate_flag=()
[ -z "$CLEANER_RATE" ] || rate_flag=(--log-cleaner-io-max-bytes-per-second "$CLEANER_RATE")
"$BROKER" --listen "$BOOTSTRAP" --data-dir "$W/data" --log-cleaner-backoff-ms 500 "${rate_flag[@]}" 2>"$W/broker.log" &
BPID=$!
for _ in $(seq 300); do grep -q "listening on" "$W/broker.log" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$W/broker.log" || { cat "$W/broker.log" >&2; die "broker not listening after 30 s"; }

n=$(( FILL_MIB * 1024 * 1024 / 280 ))   # 200-byte values, ~280 bytes a record on disk
timeout 120 "$PY" "$here" topic create busy 1 --config cleanup.policy=delete --config segment.bytes=67108864 \
  --config min.cleanable.dirty.ratio=0.01 >&2 || die "create busy"
timeout 120 "$PY" "$here" topic create lat 1 >&2 || die "create lat"
timeout 1200 "$PY" "$here" produce --topic busy --n "$n" --acks 1 --size 200 --keys $(( n / 10 )) --tag fill --broker-pid "$BPID" --timeout 1100 || die "fill"
timeout 120 "$PY" "$here" latency --topic lat --rate 1000 --secs "$LAT_SECS" --tag idle --broker-pid "$BPID" --timeout 100 || die "idle latency"
timeout 120 "$PY" "$here" topic alter busy --config cleanup.policy=compact >&2 || die "alter busy"
t0=$(date -u +%FT%T.%NZ)
timeout 120 "$PY" "$here" latency --topic lat --rate 1000 --secs "$LAT_SECS" --tag cleaning --broker-pid "$BPID" --timeout 100 || die "latency while cleaning"
t1=$(date -u +%FT%T.%NZ)
for _ in $(seq 6000); do grep -q "busy-0: cleaned" "$W/broker.log" && break; sleep 0.1; done
grep -q "busy-0: cleaned" "$W/broker.log" || die "no cleaning pass finished within 10 minutes"
start=$(grep -m1 "busy-0: cleaning from" "$W/broker.log" | awk '{print $1}')
end=$(grep -m1 "busy-0: cleaned" "$W/broker.log" | awk '{print $1}')
printf '{"kind":"cleaning-window","measured_from":"%s","measured_to":"%s","pass_started":"%s","pass_ended":"%s","pass":"%s"}\n' \
  "$t0" "$t1" "$start" "$end" "$(grep -m1 'busy-0: cleaned' "$W/broker.log" | sed 's/.*busy-0: //')"
