#!/usr/bin/env bash
# Share-group (KIP-932) consume throughput against a consumer group on the same topic, with
# confluent-kafka on one release broker (docs/benchmarks.md, "Share groups").
#
#   scripts/bench-share.sh                    # N=200000 records of 100 bytes, 4 partitions, RUNS=3
#   N=100000 RUNS=5 scripts/bench-share.sh
#   BROKER=path/to/broker scripts/bench-share.sh           # no build (A/B runs)
#   DEBUG=fetch RUNS=1 MEMBERS=1 KINDS=share scripts/bench-share.sh   # and keep librdkafka's log
#   SHARE_CONFIG="fetch.max.bytes=1048576" KINDS=share scripts/bench-share.sh   # a client setting changed
#
# One broker (data under target/bench-share, a free loopback port, the broker's default settings
# plus BROKER_FLAGS), one topic of PARTITIONS (4) partitions holding N records of 100 random
# bytes, N/PARTITIONS in each (confluent-kafka Producer, acks=1, linger.ms=5; record i to
# partition i mod PARTITIONS; the batches the broker stored are counted). Then, RUNS times, for
# each member count in MEMBERS ("1 4"), the two kinds in turn, so a slow minute touches both:
#   classic  a new consumer group (confluent-kafka Consumer, subscribe(), one process per member,
#            fetch.queue.backoff.ms=10) reads all N from the beginning;
#   share    a new share group (confluent-kafka ShareConsumer, one process per member, implicit
#            acknowledgement, max.poll.records the client's default 500 unless MAX_POLL_RECORDS),
#            its share.auto.offset.reset set to earliest first, reads all N.
# A run passes when the members were handed exactly the topic's N distinct (partition, offset)
# pairs with no error before STEP_TIMEOUT. Reported (scripts/bench_share.py --help): records/s
# and MB/s from the first record to the N-th distinct one ("steady") and from subscribe(), the
# time to the first record, duplicates, the broker's CPU per 1M records, how the records spread
# over the members and how many came per poll. The summary prints medians [min–max]; raw JSON lines
# stay in $TARGET/bench-share/results-*.jsonl (`scripts/bench_share.py summarize FILE` prints the
# table again).
#
# Environment: N (200000), PARTITIONS (4), RUNS (3), MEMBERS ("1 4"), KINDS ("classic share"),
# MAX_POLL_RECORDS (0: the client's default), SHARE_CONFIG and CLASSIC_CONFIG (client settings
# K=V, space-separated, for every member of that kind; the summary keeps such runs apart),
# STEP_TIMEOUT seconds per read (300), QUIET_WAIT seconds to wait before each read for idle CPUs
# (60; 0 = do not wait), BROKER (a broker binary: no build), BROKER_FLAGS (extra broker flags),
# DEBUG (librdkafka debug contexts for the share members, e.g. fetch; their logs are kept in the
# run directory, which is then not removed), PY (a Python with confluent-kafka; default
# target/client-venv/bin/python, then python3), CARGO_TARGET_DIR (default target). The broker is
# stopped with SIGTERM on exit and must log "stopped cleanly". Exits non-zero if any read failed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
[ $# -eq 0 ] || { echo "bench-share: no arguments expected (settings are environment variables; see --help)" >&2; exit 2; }
N=${N:-200000}; PARTITIONS=${PARTITIONS:-4}; RUNS=${RUNS:-3}; MEMBERS=${MEMBERS:-1 4}
KINDS=${KINDS:-classic share}; MAX_POLL_RECORDS=${MAX_POLL_RECORDS:-0}
SHARE_CONFIG=${SHARE_CONFIG:-}; CLASSIC_CONFIG=${CLASSIC_CONFIG:-}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}; QUIET_WAIT=${QUIET_WAIT:-60}; DEBUG=${DEBUG:-}
TARGET=${CARGO_TARGET_DIR:-target}
here=scripts/bench_share.py
clients=scripts/bench_clients.py
TOPIC=share-bench

die() { echo "bench-share: $*" >&2; exit 1; }
. scripts/client-python.sh
. scripts/broker-start.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found. Install it:
  python3 -m venv target/client-venv && target/client-venv/bin/pip install confluent-kafka
or set PY=/path/to/python."
client_versions=$("$PY" "$clients" check) || die "$PY cannot run the confluent-kafka client (see above)"
"$PY" -c 'from confluent_kafka import ShareConsumer' 2>/dev/null \
  || die "$PY has no confluent_kafka.ShareConsumer (confluent-kafka 2.16 or later): $client_versions"

if [ -z "${BROKER:-}" ]; then
  timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
  BROKER=$TARGET/release/broker
fi
export BROKER
mkdir -p "$TARGET/bench-share"
W=$(mktemp -d -p "$TARGET/bench-share" run.XXXXXX)
W=$(cd "$W" && pwd)
RESULTS=$TARGET/bench-share/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl
UNCLEAN=0
cleanup() {
  local rc=$?
  if [ -n "${BPID:-}" ]; then
    stop_broker
    if ! grep -q "stopped cleanly" "$W/broker.log"; then
      echo "bench-share: the broker did not stop cleanly; its log ends:" >&2
      tail -n 20 "$W/broker.log" >&2
      UNCLEAN=1
    fi
  fi
  [ "$UNCLEAN" -eq 0 ] || [ "$rc" -ne 0 ] || rc=1
  if [ -n "$DEBUG" ]; then echo "bench-share: librdkafka logs kept in $W" >&2; else rm -rf "$W"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# As in bench-groups.sh: wait (up to QUIET_WAIT s) for a second of idle CPUs before each read.
busy_total() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
wait_quiet() {
  local end=$((SECONDS + QUIET_WAIT)) calm=0 b0 t0 b1 t1
  [ "$QUIET_WAIT" -gt 0 ] || return 0
  read -r b0 t0 < <(busy_total)
  while [ "$SECONDS" -lt "$end" ]; do
    sleep 0.5
    read -r b1 t1 < <(busy_total)
    if [ $(( (b1 - b0) * 20 )) -le $(( t1 - t0 )) ]; then calm=$((calm + 1)); else calm=0; fi
    b0=$b1; t0=$t1
    [ "$calm" -ge 2 ] && return 0
  done
  echo "bench-share: the CPUs were not idle within ${QUIET_WAIT} s; measuring anyway" >&2
}

# shellcheck disable=SC2086 # BROKER_FLAGS is a list of flags
start_broker "$W" ${BROKER_FLAGS:-} || die "the broker did not start"
echo "bench-share: broker pid $BPID on $BOOTSTRAP, data in $W/data" >&2
printf '{"kind":"env","when":"%s","load":"%s","cpus":%s,"runs":%s,"n":%s,"partitions":%s,"broker_flags":"%s","commit":"%s"}\n' \
  "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" "$RUNS" "$N" "$PARTITIONS" "${BROKER_FLAGS:-}" \
  "$(git describe --always --dirty 2>/dev/null || echo unknown)" | tee -a "$RESULTS"
echo "$client_versions" | tee -a "$RESULTS"

timeout 120 "$PY" "$clients" topic create "$TOPIC" "$PARTITIONS" || die "creating the topic failed"
timeout 600 "$PY" "$here" produce --topic "$TOPIC" --n "$N" --broker-pid "$BPID" --timeout 540 \
  | tee -a "$RESULTS" || die "producing $N records failed"
sleep 1   # the broker's writes reach the segment files, which `batches` reads
"$PY" "$clients" batches "$W/data" "$TOPIC" --tag setup | tee -a "$RESULTS" || true

FAILED=()
for r in $(seq "$RUNS"); do
  for m in $MEMBERS; do
    for kind in $KINDS; do
      wait_quiet
      extra=()
      if [ "$kind" = share ]; then config=$SHARE_CONFIG; else config=$CLASSIC_CONFIG; fi
      for kv in $config; do extra+=(--config "$kv"); done
      [ "$kind" = share ] && [ "$MAX_POLL_RECORDS" != 0 ] && extra+=(--max-poll-records "$MAX_POLL_RECORDS")
      [ "$kind" = share ] && [ -n "$DEBUG" ] && extra+=(--debug "$DEBUG" --debug-log "$W/librdkafka-run$r-$m")
      if ! timeout "$((STEP_TIMEOUT + 120))" "$PY" "$here" read --kind "$kind" --members "$m" --topic "$TOPIC" \
          --expect "$N" --broker-pid "$BPID" --timeout "$STEP_TIMEOUT" "${extra[@]}" | tee -a "$RESULTS"; then
        FAILED+=("$kind, $m member(s), run $r")
        echo "bench-share: FAILED: $kind, $m member(s), run $r" >&2
      fi
      kill -0 "$BPID" 2>/dev/null || die "the broker died during: $kind, $m member(s), run $r (log: $W/broker.log)"
    done
  done
done

echo
"$PY" "$here" summarize "$RESULTS"
if grep -hiE ' (ERROR|WARN) ' "$W/broker.log" >/dev/null 2>&1; then
  echo; echo "Broker log warnings/errors:"; grep -hiE ' (ERROR|WARN) ' "$W/broker.log" | tail -n 20
fi
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'bench-share: %d read(s) FAILED:\n' "${#FAILED[@]}" >&2
  printf '  %s\n' "${FAILED[@]}" >&2
  exit 1
fi
