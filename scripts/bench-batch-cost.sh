#!/usr/bin/env bash
# Broker CPU per produced batch as the partition count grows, with a fixed request pattern
# (docs/benchmarks.md "Partitions at scale", issue 13 item 3). librdkafka changes how it sends
# with the partition count (fewer batches per request, more client CPU, the broker idling and
# waking between requests), so here the load is our own: `seedlog bench-connections`, one
# connection, IN_FLIGHT Produce requests outstanding, each one batch of BATCH records of 100 bytes,
# acks=all, the k-th batch to partition k mod N. Only the partition count varies. For each count
# in PARTS, one broker (started once for all counts) takes a warm-up of 10,000 records on a fresh
# topic, then RECORDS records on it; the broker's CPU (utime+stime from /proc) over the run is
# divided by the Produce requests answered, each one batch. Prints one line per count: that figure,
# split into user and kernel time (utime and stime from /proc/PID/stat around the run: the
# broker's own code against the kernel's socket and file work), and its ratio to the first
# count's figure (the target: within 1.5x from 1 to 4,000).
#
#   scripts/bench-batch-cost.sh                              # PARTS="1 100 1000 4000", RECORDS=3000000
#   PARTS="1 4000" RECORDS=500000 scripts/bench-batch-cost.sh
#   BROKER=path/to/broker SEEDLOG=path/to/seedlog scripts/bench-batch-cost.sh   # no build (A/B)
#   PERF=1 scripts/bench-batch-cost.sh   # also `perf record -g` 3 s of each run into target/bench-batch-cost/perf-N.data
#   DIR=/mnt/other-fs scripts/bench-batch-cost.sh   # the broker's data on another file system
#   BROKER_FLAGS="--metrics-listen 127.0.0.1:9404" scripts/bench-batch-cost.sh   # more broker flags
#
# Each run is bounded (SECS_MAX seconds per count); the broker is stopped (SIGTERM, SIGKILL
# after 60 s) on exit and its data directory removed.
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-"1 100 1000 4000"}; RECORDS=${RECORDS:-3000000}; BATCH=${BATCH:-10}
IN_FLIGHT=${IN_FLIGHT:-5}; SECS_MAX=${SECS_MAX:-300}; PERF=${PERF:-0}
die() { echo "bench-batch-cost: $*" >&2; exit 1; }
. scripts/client-python.sh
PY=${PY:-python3}   # only to pick a free port and read the JSON lines: no client library needed
OUT=${CARGO_TARGET_DIR:-target}
. scripts/broker-start.sh
release_bins || die "cargo build failed"
DIR=${DIR:-$OUT/bench-batch-cost}   # where the broker's data directory goes (its file system matters)
mkdir -p "$DIR" "$OUT/bench-batch-cost"
W=$(mktemp -d -p "$DIR" run.XXXXXX)
trap 'stop_broker; rm -rf "$W"' EXIT
start_broker "$W" ${BROKER_FLAGS:-} || die "start"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
first=
for n in $PARTS; do
  run() {  # $1: records, $2: tag
    timeout "$SECS_MAX" "$SEEDLOG" bench-connections --bootstrap "$BOOTSTRAP" --broker-pid "$BPID" --acks -1 \
      --in-flight "$IN_FLIGHT" --records "$1" --batch-records "$BATCH" --partitions "$n" --topic "t$n" --tag "$2" --settle-ms 200
  }
  run 10000 "warm$n" >/dev/null 2>&1 || die "warm-up at $n partitions"
  perf_pid=
  if [ "$PERF" = 1 ]; then
    ( sleep 1; exec perf record -F 1999 -g -p "$BPID" -o "$OUT/bench-batch-cost/perf-$n.data" -- sleep 3 >/dev/null 2>&1 ) &
    perf_pid=$!
  fi
  cpu0=$(cut -d' ' -f14,15 "/proc/$BPID/stat")   # utime stime, in clock ticks
  line=$(run "$RECORDS" "p$n" 2>&1 | tail -n 1) || die "run at $n partitions"
  cpu1=$(cut -d' ' -f14,15 "/proc/$BPID/stat")
  [ -z "$perf_pid" ] || wait "$perf_pid" || true
  us=$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(round(d["broker_cpu_s"]/d["requests"]*1e6,2))' "$line") \
    || die "no result at $n partitions: $line"
  first=${first:-$us}
  "$PY" - "$line" "$us" "$first" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
d, us, first = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
(u0, s0), (u1, s1), hz = map(int, sys.argv[4].split()), map(int, sys.argv[5].split()), int(sys.argv[6])
per = 1e6 / hz / d["requests"]  # a clock tick per batch, in us
print(f"{d['partitions']:>5} partitions: {d['requests']} batches, broker CPU {d['broker_cpu_s']:.2f} s, "
      f"{us:.2f} us per batch ({(u1 - u0) * per:.2f} user, {(s1 - s0) * per:.2f} kernel), "
      f"{us / first:.2f}x the first, {d['secs']:.1f} s")
PY
  sleep 1
done
