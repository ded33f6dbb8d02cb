#!/usr/bin/env bash
# Consumer-group benchmarks with confluent-kafka (docs/benchmarks.md, "Consumer groups").
#
#   scripts/bench-groups.sh                 # RUNS=3 of every step, about 3 minutes on an idle machine
#   STEPS=consume RUNS=5 scripts/bench-groups.sh
#   scripts/bench-groups.sh --help
#
# Builds the release broker, then measures on loopback only:
#   rebalance  one broker (--group-initial-rebalance-delay-ms 0), a 20-partition topic, MEMBERS
#              (10) consumers subscribing at once: seconds from subscribe() until every member
#              holds its share of the partitions, and from one member's close() until the others
#              are all assigned again; with the client's default heartbeat.interval.ms (3 s) and
#              with 100 ms.
#   kip848     the same rebalance with KIP-848 members (group.protocol=consumer, the broker's
#              uniform assignor): the heartbeat interval is the broker's, so a broker with
#              Kafka's default group.consumer.heartbeat.interval.ms (5 s), then one with 100 ms.
#   consume    one broker, N (1,000,000) records of 100 bytes on 1 and on 6 partitions, read from
#              offset 0 by assign() and by subscribe() (a new group with no offsets, and a group
#              whose offsets were committed at 0 first), fetch.queue.backoff.ms=10.
#   commits    three brokers (node 0 also the controller; replication factor 3, min.insync 2,
#              offsets topic replication factor 3 and OFFSETS_PARTITIONS partitions, default 50
#              as Kafka's): one group member commits COMMITS (2,000) changing offsets
#              synchronously; p50/p99 latency, rate, and the CPU the three brokers used.
#   sim        the rebalance figures in simulated time: builds the simulator (--cfg madsim,
#              release, into SIM_TARGET_DIR, default $TARGET/sim, which is where `cargo sim`
#              builds when CARGO_TARGET_DIR is unset) and runs scenarios/bench/group-rebalance.toml
#              (ten members, heartbeat 100 ms, one broker, no initial delay) for SIM_SEEDS (40)
#              seeds; each seed whose first churn action is a leave gives a leave figure.
# Each step runs RUNS times (3); the summary prints medians [min–max]. Raw JSON lines stay in
# $TARGET/bench-groups/results-*.jsonl; `scripts/bench_groups.py summarize FILE...` prints the
# table again.
#
# Environment: RUNS (3), STEPS ("rebalance kip848 consume commits sim"), N (1000000), COMMITS (2000),
# MEMBERS (10), OFFSETS_PARTITIONS (50), SIM_SEEDS (40), SIM_TARGET_DIR, STEP_TIMEOUT seconds per step (120), QUIET_WAIT seconds to wait before each step
# for idle CPUs (60; 0 = do not wait), PY (a Python with confluent-kafka; default
# target/client-venv/bin/python, then python3), CARGO_TARGET_DIR (where the release broker is
# built, and where data and results go; default target). Brokers are stopped with SIGTERM on exit
# (SIGKILL after 10 s). Exits non-zero if any step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
[ $# -eq 0 ] || { echo "bench-groups: no arguments expected (settings are environment variables; see --help)" >&2; exit 2; }
RUNS=${RUNS:-3}; N=${N:-1000000}; COMMITS=${COMMITS:-2000}; MEMBERS=${MEMBERS:-10}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}; QUIET_WAIT=${QUIET_WAIT:-60}; STEPS=${STEPS:-rebalance kip848 consume commits sim}
OFFSETS_PARTITIONS=${OFFSETS_PARTITIONS:-50}; SIM_SEEDS=${SIM_SEEDS:-40}
TARGET=${CARGO_TARGET_DIR:-target}
SIM_TARGET_DIR=${SIM_TARGET_DIR:-$TARGET/sim}
here=scripts/bench_groups.py
clients=scripts/bench_clients.py

die() { echo "bench-groups: $*" >&2; exit 1; }
wants() { [[ " $STEPS " == *" $1 "* ]]; }

. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found. Install it:
  python3 -m venv target/client-venv && target/client-venv/bin/pip install confluent-kafka kafka-python
or set PY=/path/to/python."
client_versions=$("$PY" "$clients" check) || die "$PY cannot run the confluent-kafka client (see above)"

timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
if wants sim; then
  timeout 3600 cargo build --config "build.rustflags=['--cfg','madsim']" --target-dir "$SIM_TARGET_DIR" --release -p sim --bin sim >&2 \
    || die "cargo build of the simulator failed"
fi
BROKER=$TARGET/release/broker
mkdir -p "$TARGET/bench-groups"
W=$(mktemp -d -p "$TARGET/bench-groups" run.XXXXXX)
RESULTS=$TARGET/bench-groups/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl
PIDS=()
NAMES=()
# Stops the brokers last started first: node 0 runs the controller, which the others' controlled
# shutdown needs. Each must say "stopped cleanly" in its log.
stop_brokers() {
  local i pid
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[$i]}
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "bench-groups: broker $pid ignored SIGTERM for 10 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    if ! grep -q "stopped cleanly" "$W/${NAMES[$i]}.log"; then
      echo "bench-groups: broker ${NAMES[$i]} did not stop cleanly; its log ends:" >&2
      tail -n 20 "$W/${NAMES[$i]}.log" >&2
      UNCLEAN=1
    fi
  done
  PIDS=(); NAMES=()
}
UNCLEAN=0
cleanup() {
  local rc=$?
  stop_brokers
  [ "$UNCLEAN" -eq 0 ] || [ "$rc" -ne 0 ] || rc=1
  rm -rf "$W"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_broker NAME PORT ARGS...: a release broker on 127.0.0.1:PORT, data in $W/NAME; waits for
# its `listening on` line (30 s). Sets BPID.
start_broker() {
  local name=$1 port=$2; shift 2
  "$BROKER" --listen "127.0.0.1:$port" --data-dir "$W/$name" "$@" 2>"$W/$name.log" &
  BPID=$!
  PIDS+=("$BPID"); NAMES+=("$name")
  for _ in $(seq 300); do
    grep -q "listening on" "$W/$name.log" 2>/dev/null && return 0
    kill -0 "$BPID" 2>/dev/null || { cat "$W/$name.log" >&2; die "broker $name exited during start-up"; }
    sleep 0.1
  done
  cat "$W/$name.log" >&2; die "broker $name not listening after 30 s"
}

# As in bench-broker.sh: wait (up to QUIET_WAIT s) for a second of idle CPUs before each step.
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
  echo "bench-groups: the CPUs were not idle within ${QUIET_WAIT} s; measuring anyway" >&2
}

FAILED=()
# step DESCRIPTION SCRIPT SUBCOMMAND ARGS...: one bounded client step, its JSON line appended.
step() {
  local what=$1 script=$2; shift 2
  wait_quiet
  if ! timeout "$((STEP_TIMEOUT + 60))" "$PY" "$script" "$@" --timeout "$STEP_TIMEOUT" | tee -a "$RESULTS"; then
    FAILED+=("$what")
    echo "bench-groups: FAILED: $what" >&2
  fi
  local pid
  for pid in "${PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || die "a broker (pid $pid) died during: $what (logs in $W)"
  done
}
setup() { timeout 300 "$PY" "$@" || die "setup step failed: $*"; }

printf '{"kind":"env","when":"%s","load":"%s","cpus":%s,"runs":%s,"n":%s,"commit":"%s"}\n' \
  "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" "$RUNS" "$N" \
  "$(git describe --always --dirty 2>/dev/null || echo unknown)" | tee -a "$RESULTS"
echo "$client_versions" | tee -a "$RESULTS"

# --- one broker: rebalance and consume ----------------------------------------------------------
if wants rebalance || wants consume; then
  PORT=$(free_port)
  export BOOTSTRAP=127.0.0.1:$PORT
  start_broker single "$PORT" --node-id 0 --group-initial-rebalance-delay-ms 0
  one=$BPID
  echo "bench-groups: broker pid $one on $BOOTSTRAP" >&2
  setup "$here" wait-brokers --brokers 1 --offsets-topic
  if wants rebalance; then
    setup "$clients" topic create rebalance 20
    for r in $(seq "$RUNS"); do
      step "rebalance default heartbeat run $r" "$here" rebalance --topic rebalance --members "$MEMBERS" \
        --broker-pid "$one" --tag "$MEMBERS members, heartbeat 3 s"
      step "rebalance heartbeat 100 ms run $r" "$here" rebalance --topic rebalance --members "$MEMBERS" \
        --heartbeat-ms 100 --broker-pid "$one" --tag "$MEMBERS members, heartbeat 100 ms"
    done
  fi
  if wants consume; then
    for parts in 1 6; do
      setup "$clients" topic create "consume-p$parts" "$parts"
      setup "$clients" produce --topic "consume-p$parts" --n "$N" --acks 1 --tag setup >/dev/null
      for r in $(seq "$RUNS"); do
        # Alternating, so a slow minute on the machine touches both modes alike.
        for mode in assign subscribe subscribe-committed; do
          step "consume $mode p$parts run $r" "$here" consume --topic "consume-p$parts" --expect "$N" \
            --mode "$mode" --backoff-ms 10 --broker-pid "$one" --tag "p$parts"
        done
      done
    done
  fi
  stop_brokers
fi

# --- KIP-848: the rebalance with the broker's heartbeat interval at 5 s, then 100 ms ------------
if wants kip848; then
  for hb in 5000 100; do
    PORT=$(free_port)
    export BOOTSTRAP=127.0.0.1:$PORT
    start_broker "kip848-$hb" "$PORT" --node-id 0 --group-initial-rebalance-delay-ms 0 --group-consumer-heartbeat-interval-ms "$hb"
    one=$BPID
    setup "$here" wait-brokers --brokers 1 --offsets-topic
    setup "$clients" topic create rebalance 20
    for r in $(seq "$RUNS"); do
      step "kip848 rebalance heartbeat $hb ms run $r" "$here" rebalance --topic rebalance --members "$MEMBERS" \
        --protocol consumer --heartbeat-ms "$hb" --broker-pid "$one" --tag "$MEMBERS members, KIP-848, broker heartbeat $hb ms"
    done
    stop_brokers
  done
fi

# --- three brokers: commits -------------------------------------------------------------------
if wants commits; then
  read -r P0 P1 P2 < <("$PY" -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
  export BOOTSTRAP=127.0.0.1:$P0
  cluster=(--controller-quorum-voters "0@127.0.0.1:$P0" --default-replication-factor 3 --min-insync-replicas 2
           --offsets-topic-replication-factor 3 --offsets-topic-num-partitions "$OFFSETS_PARTITIONS"
           --group-initial-rebalance-delay-ms 0)
  start_broker node0 "$P0" --node-id 0 "${cluster[@]}"; b0=$BPID
  start_broker node1 "$P1" --node-id 1 "${cluster[@]}"; b1=$BPID
  start_broker node2 "$P2" --node-id 2 "${cluster[@]}"; b2=$BPID
  echo "bench-groups: cluster on $P0 $P1 $P2, pids ${PIDS[*]}" >&2
  setup "$here" wait-brokers --brokers 3 --offsets-topic
  setup "$clients" topic create commits 1 --replication-factor 3
  for r in $(seq "$RUNS"); do
    step "commits run $r" "$here" commits --topic commits --n "$COMMITS" --node-pids "0:$b0,1:$b1,2:$b2" \
      --tag "3 brokers, RF 3, $OFFSETS_PARTITIONS offsets partitions"
  done
  stop_brokers
fi

# --- the simulator: the same rebalances in simulated time ------------------------------------
if wants sim; then
  step "sim rebalance" "$here" sim --sim "$SIM_TARGET_DIR/release/sim" --scenario scenarios/bench/group-rebalance.toml \
    --seeds "$SIM_SEEDS"
fi

echo
"$PY" "$here" summarize "$RESULTS"
if grep -hiE ' (ERROR|WARN) ' "$W"/*.log >/dev/null 2>&1; then
  echo; echo "Broker log warnings/errors:"; grep -hiE ' (ERROR|WARN) ' "$W"/*.log | tail -n 20
fi
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'bench-groups: %d step(s) FAILED:\n' "${#FAILED[@]}" >&2
  printf '  %s\n' "${FAILED[@]}" >&2
  exit 1
fi
