#!/usr/bin/env bash
# Many connections on one broker (docs/benchmarks.md, issue 13 item 5): `seedlog
# bench-connections` against a fresh release broker per case. A case is PRODUCERS:IN_FLIGHT:IDLE
# and runs once per acks value: the idle connections are opened first (ApiVersions, then
# silent), then the producer connections, which share one budget of RECORDS records (BATCH
# records of RECORD_BYTES bytes per Produce, spread over PARTITIONS partitions), each with at
# most IN_FLIGHT requests outstanding. The default compares one connection pushing as hard as
# it can (in flight 5, librdkafka's default) with 1,000 connections (in flight 1) next to 1,000
# idle ones, both sending the same total, and prints a Markdown table: records/s, MB/s, latency,
# broker CPU, and the broker's RSS per idle and per producer connection.
#
#   scripts/bench-connections.sh                          # CASES="1:5:0 1000:1:1000" ACKS="1 -1"
#   CASES="1:5:0 100:1:0 1000:1:1000" RECORDS=5000000 scripts/bench-connections.sh
#   BROKER=path/to/broker SEEDLOG=path/to/seedlog scripts/bench-connections.sh   # no build
#   WORKERS=1 scripts/bench-connections.sh                # the broker's --worker-threads (default: one per core)
#
# Bounded: every run stops after SECS_MAX seconds whatever its budget, connections are capped
# by the descriptor limit (raised here with `ulimit -n` to what the largest case needs, within
# the hard limit: each connection is a descriptor in the client and one in the broker), and the
# broker is stopped (SIGTERM, SIGKILL after 60 s) after each case, its data directory removed.
# Raw JSON lines stay in $CARGO_TARGET_DIR/bench-connections/results-*.jsonl (target/ by default).
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${CASES:-"1:5:0 1000:1:1000"}; ACKS=${ACKS:-"1 -1"}; RECORDS=${RECORDS:-3000000}
BATCH=${BATCH:-100}; RECORD_BYTES=${RECORD_BYTES:-100}; PARTITIONS=${PARTITIONS:-6}; SECS_MAX=${SECS_MAX:-60}
WORKERS=${WORKERS:-}
die() { echo "bench-connections: $*" >&2; exit 1; }
. scripts/client-python.sh
PY=${PY:-python3}   # only to pick a free port and print the table: no client library needed
OUT=${CARGO_TARGET_DIR:-target}
. scripts/broker-start.sh
release_bins || die "cargo build failed"

# Descriptors: the largest case's connections, twice over (they are all on loopback) plus room.
need=256
for c in $CASES; do IFS=: read -r p _ i <<<"$c"; (( p + i + 256 > need )) && need=$((p + i + 256)); done
if (( $(ulimit -n) < need )); then
  ulimit -n "$need" 2>/dev/null || die "need $need descriptors, RLIMIT_NOFILE is $(ulimit -n) (hard $(ulimit -Hn))"
  echo "bench-connections: raised RLIMIT_NOFILE to $need" >&2
fi

mkdir -p "$OUT/bench-connections"
results=$OUT/bench-connections/results-$(date +%Y%m%d-%H%M%S).jsonl
W=
trap 'stop_broker; [ -n "$W" ] && rm -rf "$W"' EXIT
for acks in $ACKS; do
  for c in $CASES; do
    IFS=: read -r producers in_flight idle <<<"$c"
    W=$(mktemp -d -p "$OUT/bench-connections" run.XXXXXX)
    start_broker "$W" ${WORKERS:+--worker-threads "$WORKERS"} || die "broker start"
    timeout $((SECS_MAX + 120)) "$SEEDLOG" bench-connections --bootstrap "$BOOTSTRAP" --broker-pid "$BPID" \
      --producers "$producers" --in-flight "$in_flight" --idle "$idle" --acks "$acks" --records "$RECORDS" \
      --batch-records "$BATCH" --record-bytes "$RECORD_BYTES" --partitions "$PARTITIONS" --secs-max "$SECS_MAX" \
      --tag "$c" >>"$results" || die "case $c acks=$acks failed (broker log: $W/broker.log)"
    stop_broker
    grep -q "stopped cleanly" "$W/broker.log" || echo "bench-connections: the broker did not say it stopped cleanly ($c, acks=$acks)" >&2
    rm -rf "$W"; W=
  done
done
"$PY" - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| producers (in flight) | idle | acks | records/s | MB/s | p50 ms | p99 ms | broker CPU s per 1M | RSS per idle conn | RSS per producer conn | peak RSS MiB | complete |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in rows:
    kib = lambda b: f"{b / 1024:.1f} KiB"
    print(f"| {r['producers']} ({r['in_flight']}) | {r['idle']} | {'all' if r['acks'] == -1 else r['acks']} | {r['records_per_s']:,.0f} | {r['mb_per_s']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['broker_cpu_s_per_1m']} | {kib(r['idle_bytes_per_conn']) if r['idle'] else '-'} | {kib(r['producer_bytes_per_conn'])} / {kib(r['after_bytes_per_conn'])} after | {r['rss_peak_mib']} | {'yes' if r['complete'] else 'no: SECS_MAX'} |")
for acks in sorted({r['acks'] for r in rows}):
    # The reference: one connection, the most requests in flight measured.
    ones = [r for r in rows if r['acks'] == acks and r['producers'] == 1]
    if not ones:
        continue
    one = max(ones, key=lambda r: r['in_flight'])
    for r in rows:
        if r['acks'] == acks and r['producers'] > 1:
            print(f"\nacks={'all' if acks == -1 else acks}: {r['producers']} connections reach {r['records_per_s'] / one['records_per_s']:.0%} of one connection's records/s with {one['in_flight']} in flight (target: at least 80%)")
PY
echo "raw results: $results" >&2
