#!/usr/bin/env bash
# The broker benchmark with real clients (docs/benchmarks.md).
#
#   scripts/bench-broker.sh                      # one run of everything, about 2 minutes
#   RUNS=3 scripts/bench-broker.sh               # three runs, medians in the table (about 5)
#
# Builds the release broker, starts it on a free loopback port with a fresh data directory under
# target/ (not /tmp, which may be a tmpfs where writes cost nothing), and measures it from the
# outside with confluent-kafka and kcat: produce 1 and 6 partitions x acks=1/all, consume from
# offset 0, broker CPU per 1M records, acks=all latency at 1,000 records/s. The clients live in
# scripts/bench_clients.py. Prints a Markdown table of medians beside the targets; the raw JSON
# lines stay in target/bench-broker/results-*.jsonl.
#
# Environment: RUNS (default 1), N records per step (default 1000000), LAT_SECS (default 10),
# STEP_TIMEOUT seconds per step (default 300), QUIET_WAIT seconds to wait before each step for
# idle CPUs (default 60; 0 = do not wait), PY (a Python with confluent-kafka; default
# target/client-venv/bin/python, then python3). Exits non-zero if any step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1}; N=${N:-1000000}; LAT_SECS=${LAT_SECS:-10}; STEP_TIMEOUT=${STEP_TIMEOUT:-300}
QUIET_WAIT=${QUIET_WAIT:-60}
here=scripts/bench_clients.py

die() { echo "bench-broker: $*" >&2; exit 1; }

# --- clients: fail loudly, never skip ---------------------------------------------------------
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found. Install it:
  python3 -m venv target/client-venv && target/client-venv/bin/pip install confluent-kafka kafka-python
(or run scripts/test.sh, which does), or set PY=/path/to/python."
clients=$("$PY" "$here" check) || die "$PY cannot run the confluent-kafka client (see above)"
command -v kcat >/dev/null 2>&1 || die "kcat not found on PATH. Install it: apt-get install kcat"
kcat_version=$(kcat -V 2>&1 | grep -o 'Version [0-9.]*\|librdkafka [0-9.]*' | paste -sd' ' || true)

# --- build and start the broker ---------------------------------------------------------------
timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
mkdir -p target/bench-broker
W=$(mktemp -d -p target/bench-broker run.XXXXXX)
RESULTS=target/bench-broker/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl
BPID=
cleanup() {
  local rc=$?
  if [ -n "$BPID" ] && kill -0 "$BPID" 2>/dev/null; then
    kill -TERM "$BPID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$BPID" 2>/dev/null; then
      echo "bench-broker: broker $BPID ignored SIGTERM for 10 s; killing it" >&2
      kill -KILL "$BPID" 2>/dev/null || true
    fi
    if ! grep -q "stopped cleanly" "$W/broker.log"; then
      echo "bench-broker: the broker did not stop cleanly; its log ends:" >&2
      tail -n 20 "$W/broker.log" >&2
      [ "$rc" -ne 0 ] || rc=1
    fi
  fi
  rm -rf "$W"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export BOOTSTRAP=127.0.0.1:$PORT
target/release/broker --listen "$BOOTSTRAP" --data-dir "$W/data" 2>"$W/broker.log" &
BPID=$!
for _ in $(seq 300); do
  grep -q "listening on" "$W/broker.log" 2>/dev/null && break
  kill -0 "$BPID" 2>/dev/null || { cat "$W/broker.log" >&2; die "broker exited during start-up"; }
  sleep 0.1
done
grep -q "listening on" "$W/broker.log" || { cat "$W/broker.log" >&2; die "broker not listening after 30 s"; }
echo "bench-broker: broker pid $BPID on $BOOTSTRAP, data in $W/data, results in $RESULTS" >&2

env_line() {
  printf '{"kind":"env","when":"%s","phase":"%s","load":"%s","cpus":%s,"fs":"%s","kernel":"%s","runs":%s,"n":%s,"kcat":"%s","commit":"%s"}\n' \
    "$(date -u +%FT%TZ)" "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" \
    "$(df -T "$W" | awk 'NR==2{print $2}')" "$(uname -r)" "$RUNS" "$N" "$kcat_version" \
    "$(git describe --always --dirty 2>/dev/null || echo unknown)"
}
{ env_line start; echo "$clients"; } | tee -a "$RESULTS"

FAILED=()
# Waits (up to QUIET_WAIT seconds) until the CPUs have been idle for a second: on a small
# machine a compile next door halves throughput and turns p99 latency into milliseconds. Each
# step also reports `other_cores` (CPU neither the broker nor the client used), and the summary
# leaves out steps where that was high, saying how many.
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
  echo "bench-broker: the CPUs were not idle within ${QUIET_WAIT} s; measuring anyway" >&2
}

# step DESCRIPTION SUBCOMMAND ARGS...: runs one bounded client step, appends its JSON line,
# remembers a failure, and stops everything if the broker died.
step() {
  local what=$1; shift
  wait_quiet
  if ! timeout "$((STEP_TIMEOUT + 60))" "$PY" "$here" "$@" --broker-pid "$BPID" --timeout "$STEP_TIMEOUT" \
       | tee -a "$RESULTS"; then
    FAILED+=("$what")
    echo "bench-broker: FAILED: $what" >&2
  fi
  if ! kill -0 "$BPID" 2>/dev/null; then
    tail -n 30 "$W/broker.log" >&2
    die "the broker died during: $what"
  fi
}
topic() { timeout 120 "$PY" "$here" topic "$@" || die "topic $* failed (broker log: $W/broker.log)"; }

"$PY" "$here" datafile "$W/records.txt" --n "$N"
for r in $(seq "$RUNS"); do
  for parts in 1 6; do for acks in 1 all; do
    tag="p$parts acks=$acks"
    t=bench-p$parts-a$acks-r$r
    topic create "$t" "$parts"
    step "produce $tag run $r" produce --topic "$t" --n "$N" --acks "$acks" --tag "$tag"
    step "consume $tag run $r" consume --topic "$t" --expect "$N" --tag "$tag"
    step "consume backoff 10 $tag run $r" consume --topic "$t" --expect "$N" --tag "$tag" --backoff-ms 10
    topic delete "$t"
    t=bench-kcat-p$parts-a$acks-r$r
    topic create "$t" "$parts"
    step "kcat produce $tag run $r" kcat-produce --topic "$t" --file "$W/records.txt" --n "$N" --acks "$acks" --tag "$tag"
    step "kcat consume $tag run $r" kcat-consume --topic "$t" --expect "$N" --tag "$tag"
    step "kcat consume big queue $tag run $r" kcat-consume --topic "$t" --expect "$N" --tag "$tag" --big-queue
    topic delete "$t"
  done; done
  t=bench-latency-r$r
  topic create "$t" 1
  step "latency run $r" latency --topic "$t" --rate 1000 --secs "$LAT_SECS" --tag "p1 acks=all 1000/s"
  topic delete "$t"
done
env_line end | tee -a "$RESULTS"

echo
"$PY" "$here" summarize "$RESULTS"
if grep -qiE ' (ERROR|WARN) ' "$W/broker.log"; then
  echo; echo "Broker log warnings/errors:"; grep -iE ' (ERROR|WARN) ' "$W/broker.log" | tail -n 20
fi
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'bench-broker: %d step(s) FAILED:\n' "${#FAILED[@]}" >&2
  printf '  %s\n' "${FAILED[@]}" >&2
  exit 1
fi
