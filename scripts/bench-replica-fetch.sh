#!/usr/bin/env bash
# Replica fetch as partitions grow (docs/benchmarks.md, issue 13 item 3): a 3-broker cluster
# (three release brokers on loopback, all controller voters) with one topic of N partitions
# at replication factor RF and no traffic at all; once every partition has its full ISR, the
# three brokers' CPU from /proc/PID/stat over SECS seconds. With RF=3 each broker follows two
# leaders, each fetcher long-polling every replica_fetch_wait_ms (500 ms) with every partition
# it follows from that leader; RF=1 is the same cluster with no replica fetching (the per-tick
# upkeep alone), so the difference is what idle replica fetches cost.
#
#   scripts/bench-replica-fetch.sh                    # PARTS="100 4000" RF="1 3" SECS=20
#   BROKER=/path/to/broker PARTS=4000 RF=3 scripts/bench-replica-fetch.sh
#
# Prints one JSON line per (partitions, rf).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-"100 4000"}; RFS=${RF:-"1 3"}; SECS=${SECS:-20}
die() { echo "bench-replica-fetch: $*" >&2; exit 1; }
. scripts/client-python.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
if [ -z "${BROKER:-}" ]; then
  timeout 1800 cargo build --release -p broker-core --bin broker >&2 || die "cargo build failed"
  BROKER=target/release/broker
fi
mkdir -p target/bench-replica-fetch
pids=()
W=
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  [ -n "$W" ] && rm -rf "$W"
  W=
}
trap stop_all EXIT
cpu_ticks() { local s=0 f; for p in "${pids[@]}"; do read -r -a f < "/proc/$p/stat"; s=$((s + f[13] + f[14])); done; echo "$s"; }
for n in $PARTS; do
  for rf in $RFS; do
    W=$(mktemp -d -p target/bench-replica-fetch run.XXXXXX)
    ports=($("$PY" -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])'))
    Q="0@127.0.0.1:${ports[0]},1@127.0.0.1:${ports[1]},2@127.0.0.1:${ports[2]}"
    for i in 0 1 2; do
      "$BROKER" --node-id "$i" --listen "127.0.0.1:${ports[$i]}" --data-dir "$W/d$i" --controller-quorum-voters "$Q" \
        --default-replication-factor 3 --min-insync-replicas 1 2>"$W/b$i.log" &
      pids+=($!)
    done
    timeout 300 "$PY" - "127.0.0.1:${ports[0]}" "$n" "$rf" <<'PY' || die "topic of $n partitions, rf $rf"
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
boot, n, rf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = AdminClient({"bootstrap.servers": boot})
deadline = time.time() + 240
while True:
    try:
        for f in a.create_topics([NewTopic("t", n, rf)], request_timeout=60).values():
            f.result(timeout=60)
        break
    except Exception as e:  # the quorum may still be electing
        if time.time() > deadline:
            raise
        time.sleep(1)
while time.time() < deadline:
    t = a.list_topics("t", timeout=30).topics.get("t")
    if t and len(t.partitions) == n and all(p.leader >= 0 and len(p.isrs) == rf for p in t.partitions.values()):
        break
    time.sleep(1)
else:
    sys.exit("not every partition has its full ISR")
PY
    sleep 5
    c0=$(cpu_ticks); sleep "$SECS"; c1=$(cpu_ticks)
    "$PY" -c "
import json
cpu = ($c1 - $c0) / $(getconf CLK_TCK)
print(json.dumps({'kind': 'idle-replica-fetch', 'partitions': $n, 'rf': $rf, 'secs': $SECS, 'cluster_cpu_s': round(cpu, 2), 'cpu_ms_per_s': round(cpu / $SECS * 1000)}))"
    stop_all
  done
done
