#!/usr/bin/env bash
# Zero-copy fetch against the copying path (docs/benchmarks.md, issue 13).
#
#   scripts/bench-fetch.sh                                  # everything, defaults below
#   SIZES="65536" TOTAL_MB=512 REPLICA_MB=0 scripts/bench-fetch.sh   # a quick look
#
# Consume: for each record size, one broker fills a topic (one partition) with TOTAL_MB of
# records, then is restarted with --fetch-zero-copy true and false in turn on the same data; each
# time kcat and confluent-kafka read the topic from offset 0 (from the page cache: it was just
# written, and 24 GiB of RAM hold it). Reported per (size, path, client): seconds, MB/s, and the
# broker's CPU seconds (utime+stime from /proc/PID/stat) per GiB sent, counted from when the
# restarted broker's start-up work is done (its CPU time still for half a second).
# Replica fetch: three brokers, RF 3; broker 2 is stopped, REPLICA_MB is produced (acks=1), then
# broker 2 restarts with an empty data directory and copies the partition from the leader;
# reported: the leader's CPU seconds per GiB replicated, each path.
#
# Environment: SIZES (bytes, default "1024 65536 1048576"; empty: replica step only), TOTAL_MB (default 2048), CLIENTS
# (default "kcat confluent"), PATHS (default "true false": --fetch-zero-copy values),
# PARTITION_BYTES (the clients' fetch.message.max.bytes, default 1048576, librdkafka's default;
# raised to a record's size when smaller), REPLICA_MB (default 1024; 0 skips the replica
# step), PY (a Python with confluent-kafka). Data lives under target/bench-fetch/ (not /tmp,
# which may be a tmpfs). Prints one line per measurement and a Markdown table at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES-"1024 65536 1048576"}; TOTAL_MB=${TOTAL_MB:-2048}; CLIENTS=${CLIENTS:-"kcat confluent"}
PATHS=${PATHS:-"true false"}; PARTITION_BYTES=${PARTITION_BYTES:-1048576}; REPLICA_MB=${REPLICA_MB:-1024}
die() { echo "bench-fetch: $*" >&2; exit 1; }
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka (python3 -m venv target/client-venv && target/client-venv/bin/pip install confluent-kafka), or set PY"
command -v kcat >/dev/null || die "kcat not found: apt-get install kcat"
timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
BIN=${CARGO_TARGET_DIR:-target}/release/broker
mkdir -p target/bench-fetch
W=$(mktemp -d -p target/bench-fetch run.XXXXXX)
PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap 'stop_all; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
TICK=$(getconf CLK_TCK)
cpu() { awk -v t="$TICK" '{printf "%.3f\n", ($14 + $15) / t}' "/proc/$1/stat"; }
port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# start NAME PORT ARGS...: a broker in the background, its pid in $LAST once it listens.
start() {
  local name=$1 port=$2; shift 2
  "$BIN" --listen "127.0.0.1:$port" --message-max-bytes 2000000 "$@" 2>"$W/$name.log" &
  LAST=$!; PIDS+=("$LAST")
  for _ in $(seq 300); do grep -qs "listening on" "$W/$name.log" && return 0; kill -0 "$LAST" || break; sleep 0.1; done
  tail "$W/$name.log" >&2; die "broker $name did not start"
}
# settle PID: until the broker's start-up work is done (its CPU time still for 0.5 s; at most
# 60 s). A restarted broker rebuilds each partition's producer state from its batch headers,
# which on a 2 GiB log costs about half a CPU-second: not fetch work, so not in the figures.
settle() { local a b; for _ in $(seq 120); do a=$(cpu "$1"); sleep 0.5; b=$(cpu "$1"); [ "$a" = "$b" ] && return 0; done; echo "bench-fetch: broker $1 still busy after 60 s" >&2; }
stop() { kill -TERM "$1"; wait "$1" 2>/dev/null || true; local keep=(); for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done; PIDS=("${keep[@]}"); }
ROWS=()
row() { echo "$*" >&2; ROWS+=("$*"); }

echo "bench-fetch: load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores, commit $(git describe --always --dirty)" >&2
for size in $SIZES; do
  P=$(port); B=127.0.0.1:$P; D=$W/data-$size; topic=t$size
  start fill "$P" --data-dir "$D"
  n=$("$PY" scripts/bench_fetch.py produce --bootstrap "$B" --topic "$topic" --size "$size" --total-mb "$TOTAL_MB")
  stop "$LAST"
  bytes=$((n * size)); pb=$(( PARTITION_BYTES > size + 4096 ? PARTITION_BYTES : size + 4096 ))
  for zc in $PATHS; do
    start "c-$size-$zc" "$P" --data-dir "$D" --fetch-zero-copy "$zc"; BP=$LAST
    settle "$BP"
    for client in $CLIENTS; do
      c0=$(cpu "$BP"); t0=$(date +%s.%N)
      if [ "$client" = kcat ]; then
        timeout 900 kcat -C -b "$B" -t "$topic" -p 0 -o beginning -e -q -f '%S\n' -X fetch.message.max.bytes="$pb" >/dev/null
      else
        timeout 960 "$PY" scripts/bench_fetch.py consume --bootstrap "$B" --topic "$topic" --expect-bytes "$bytes" --partition-bytes "$pb" >/dev/null
      fi
      t1=$(date +%s.%N); c1=$(cpu "$BP")
      row "$(awk -v s="$size" -v z="$zc" -v c="$client" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" 'BEGIN {
        g = b / 2^30; printf "| %d | %s | %s | %.2f | %.0f | %.2f | %.3f |", s, (z == "true" ? "zero-copy" : "copy"), c, t1 - t0, b / 1e6 / (t1 - t0), c1 - c0, (c1 - c0) / g }')"
    done
    stop "$BP"
  done
  rm -rf "$D"
done

if [ "$REPLICA_MB" -gt 0 ]; then
  for zc in $PATHS; do
    P0=$(port); P1=$(port); P2=$(port)
    V="--controller-quorum-voters 0@127.0.0.1:$P0 --default-replication-factor 3 --min-insync-replicas 1 --fetch-zero-copy $zc"
    start r0 "$P0" --node-id 0 --data-dir "$W/r0" $V; R0=$LAST
    start r1 "$P1" --node-id 1 --data-dir "$W/r1" $V; R1=$LAST
    start r2 "$P2" --node-id 2 --data-dir "$W/r2" $V; R2=$LAST
    # The topic made while all three run (RF 3), broker 2 in its ISR, then broker 2 stopped.
    # The first produce creates the topic; right after three fresh starts it may race the
    # brokers' registration (kcat then exits 1 and the whole run stopped here once): retry.
    for _ in $(seq 50); do echo x | kcat -P -b "127.0.0.1:$P0" -t rep -p 0 -X acks=all 2>/dev/null && break; sleep 0.2; done
    for _ in $(seq 100); do kcat -L -b "127.0.0.1:$P0" -t rep | grep -q "isrs: .*2" && break; sleep 0.2; done
    stop "$R2"
    "$PY" scripts/bench_fetch.py produce --bootstrap "127.0.0.1:$P0" --topic rep --size 65536 --total-mb "$REPLICA_MB" >/dev/null
    leader=$(kcat -L -b "127.0.0.1:$P0" -t rep | sed -n 's/.*partition 0, leader \([0-9]*\),.*/\1/p')
    LP=$([ "$leader" = 0 ] && echo "$R0" || echo "$R1")
    target=$(cat "$W/r$leader"/rep-0/*.log | wc -c)
    rm -rf "$W/r2"
    c0=$(cpu "$LP"); t0=$(date +%s.%N)
    start r2b "$P2" --node-id 2 --data-dir "$W/r2" $V
    for _ in $(seq 6000); do
      have=$(cat "$W/r2"/rep-0/*.log 2>/dev/null | wc -c)
      [ "$have" -ge "$target" ] && break; sleep 0.1
    done
    t1=$(date +%s.%N); c1=$(cpu "$LP")
    [ "$have" -ge "$target" ] || die "broker 2 copied $have of $target bytes in 10 minutes"
    row "$(awk -v z="$zc" -v b="$target" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" 'BEGIN {
      printf "| replica 64 KiB | %s | follower | %.2f | %.0f | %.2f | %.3f |", (z == "true" ? "zero-copy" : "copy"), t1 - t0, b / 1e6 / (t1 - t0), c1 - c0, (c1 - c0) / (b / 2^30) }')"
    stop_all; rm -rf "$W/r0" "$W/r1" "$W/r2"
  done
fi

echo
echo "| record bytes | path | client | seconds | MB/s | broker CPU s | CPU s per GiB |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
