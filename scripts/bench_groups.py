#!/usr/bin/env python3
"""The client side of scripts/bench-groups.sh: consumer groups measured with confluent-kafka.

One subcommand per step; each prints one JSON line on stdout and exits non-zero when the step
failed (an error, records missing, a deadline passed). Every wait has a deadline.

    bench_groups.py rebalance --topic T --members 10 [--heartbeat-ms H]
        M consumers subscribe at once (one thread each, polling every 10 ms): seconds from the
        first subscribe() until every member holds a non-empty share and the shares split the
        topic's partitions exactly ("join_s", with "join_generations": how many assignments the
        member that had most got on the way). After a pause of --settle-s plus a random part of
        up to --jitter-s (so the close falls at a random point of the members' heartbeat cycle),
        one member closes (LeaveGroup): seconds from the start of its close() until each of the
        others has been assigned again and their shares split the partitions ("leave_s"), made of
        the wait until the last of them learned of the rebalance from a heartbeat and revoked
        ("leave_notice_s") and from the first revocation to the last assignment
        ("leave_rebalance_s": rejoin, the leader's assignment, SyncGroup). Times are those of the
        on_assign/on_revoke callbacks.
    bench_groups.py commits --topic T --n 2000
        one group member commits synchronously N times, each a new offset of partition 0
        (warm-up commits first, not counted): latency of each commit() call, p50/p90/p99/max,
        and commits/s over the N. With --node-pids, the CPU of all the brokers together (the
        coordinator's appends and the followers' fetches of them).
    bench_groups.py consume --topic T --expect N --mode MODE [--backoff-ms 10]
        all N records from offset 0, as scripts/bench_clients.py consume does: by assign()
        ("assign"), or as the only member of a new group by subscribe(): a group without offsets
        and auto.offset.reset=earliest ("subscribe"), or a group whose offsets were committed at
        0 first ("subscribe-committed"; librdkafka resets a partition without a committed offset
        through a 100 ms offset-query timer, which this leaves out). Reports the rate from the
        assign()/subscribe() call ("msgs_per_s", the join included) and from the first record
        read ("steady_msgs_per_s"), and the time to the first record.
    bench_groups.py wait-brokers --brokers 3 [--offsets-topic]
        until metadata lists that many brokers (a cluster's registration); with
        --offsets-topic, also until FindCoordinator answers (its first call creates
        __consumer_offsets, which is then not part of any measurement).
    bench_groups.py sim --sim PATH/sim --scenario scenarios/bench/group-rebalance.toml --seeds 20
        the same rebalance figures in simulated time, per seed, from `sim run --timeline
        --trace`: "join_s" from the members' start (the harness starts them once the topics
        exist) until the first generation in which every member owns its share; "leave_s" from
        the first churn action, if it is a leave (the member's revocation starts its close()),
        until the next generation in which all the others own theirs (split into
        "leave_notice_s" and "leave_rebalance_s" as above). Seeds whose first churn is a crash
        or a stall give no leave figure.
    bench_groups.py summarize RESULTS.jsonl ...
        medians [min–max] as a Markdown table.

The broker address comes from $BOOTSTRAP (default 127.0.0.1:9092); --broker-pid adds the
broker's CPU seconds to a step (see bench_clients.py, whose helpers this file uses).
"""

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_clients import BOOTSTRAP, BrokerCpu, emit, need_confluent  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


class BrokersCpu(BrokerCpu):
    """BrokerCpu summed over several broker processes (a cluster on this machine)."""

    def __init__(self, pids):
        super().__init__(pids[0])
        self.pids = pids

    def ticks(self):
        return sum(BrokerCpu(p).ticks() for p in self.pids)

    def sched_ns(self):
        return sum(BrokerCpu(p).sched_ns() for p in self.pids)


# ----- rebalance ----------------------------------------------------------------------------

class Member:
    """A group consumer polled by its own thread; its share as the callbacks last said."""

    def __init__(self, i, topic, group, heartbeat_ms, clock, protocol="classic"):
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": BOOTSTRAP, "group.id": group, "client.id": f"bench-member-{i:02d}",
                "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if protocol == "consumer":
            # KIP-848: the broker assigns (its default, uniform) and sets the heartbeat interval.
            conf["group.protocol"] = "consumer"
        else:
            conf["partition.assignment.strategy"] = "range"
        if heartbeat_ms is not None and protocol == "classic":
            conf["heartbeat.interval.ms"] = heartbeat_ms
            conf["session.timeout.ms"] = 6000       # the broker's minimum; the default is 45 s
        # KIP-848's callbacks are incremental: what is added, what is taken away.
        self.incremental = protocol == "consumer"
        self.consumer = Consumer(conf)
        self.topic, self.clock = topic, clock
        self.share = frozenset()
        self.assigned_at = None                     # clock() of the last on_assign
        self.events = []                            # (clock(), "assign"|"revoke", partitions)
        self.errors = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def on_assign(self, consumer, partitions):
        with self.lock:
            given = frozenset(tp.partition for tp in partitions)
            self.share = self.share | given if self.incremental else given
            self.assigned_at = self.clock()
            self.events.append((round(self.assigned_at, 3), "assign", sorted(self.share)))

    def on_revoke(self, consumer, partitions):
        with self.lock:
            taken = frozenset(tp.partition for tp in partitions)
            self.share = self.share - taken if self.incremental else frozenset()
            self.events.append((round(self.clock(), 3), "revoke", sorted(tp.partition for tp in partitions)))

    def subscribe(self):
        self.consumer.subscribe([self.topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            m = self.consumer.poll(0.01)
            if m is not None and m.error() is not None:
                self.errors.append(str(m.error()))

    def state(self):
        with self.lock:
            return self.share, self.assigned_at

    def close(self):
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()


def split_exactly(states, partitions):
    """Every share non-empty, no partition twice, all partitions covered."""
    shares = [s for s, _ in states]
    return all(shares) and sum(len(s) for s in shares) == len(partitions) and frozenset().union(*shares) == partitions


def cmd_rebalance(a):
    need_confluent()
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": BOOTSTRAP}).list_topics(a.topic, timeout=10).topics[a.topic]
    partitions = frozenset(md.partitions)
    if len(partitions) < a.members:
        sys.exit(f"{a.topic} has {len(partitions)} partitions; {a.members} members need at least as many")
    group = f"bench-rebalance-{os.getpid()}-{time.time_ns()}"
    t0 = time.perf_counter()
    clock = lambda: time.perf_counter() - t0  # noqa: E731
    members = [Member(i, a.topic, group, a.heartbeat_ms, clock, a.protocol) for i in range(a.members)]
    rec = {"kind": "rebalance", "tag": a.tag, "topic": a.topic, "members": a.members, "partitions": len(partitions),
           "heartbeat_ms": a.heartbeat_ms, "protocol": a.protocol}
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    deadline = time.monotonic() + a.timeout
    ok = False
    try:
        t0 = time.perf_counter()
        for m in members:
            m.subscribe()
        subscribed = clock()
        while not split_exactly([m.state() for m in members], partitions):
            if time.monotonic() > deadline:
                rec["failed"] = f"join: shares {[sorted(m.state()[0]) for m in members]}"
                return
            time.sleep(0.002)
        joined = max(m.state()[1] for m in members)
        rec["join_s"] = round(joined, 3)
        rec["subscribe_calls_s"] = round(subscribed, 3)
        time.sleep(a.settle_s + random.uniform(0, a.jitter_s))   # Stable, heartbeats running
        rest = members[1:]
        if any(m.state()[1] > joined for m in members):
            rec["failed"] = "the group rebalanced again after every member was assigned"
            return
        leaving = members[0]
        close_start = clock()
        leaving.close()
        rec["close_call_s"] = round(clock() - close_start, 3)
        # Classic: every member is assigned again (eager range). KIP-848: only the members given
        # the leaver's partitions hear of the change.
        moved = all if a.protocol == "classic" else any
        while not (split_exactly([m.state() for m in rest], partitions)
                   and moved(m.state()[1] > close_start for m in rest)):
            if time.monotonic() > deadline:
                rec["failed"] = f"leave: shares {[(sorted(s), t) for s, t in (m.state() for m in rest)]}"
                return
            time.sleep(0.002)
        rec["leave_s"] = round(max(m.state()[1] for m in rest) - close_start, 3)
        revokes = [t for m in rest for (t, kind, _) in m.events if kind == "revoke" and t > close_start]
        if revokes:
            rec["leave_notice_s"] = round(max(revokes) - close_start, 3)
            rec["leave_rebalance_s"] = round(max(m.state()[1] for m in rest) - min(revokes), 3)
        rec["join_generations"] = max(sum(1 for (t, kind, _) in m.events if kind == "assign" and t <= joined) for m in members)
        errors = [e for m in members for e in m.errors]
        rec["errors"] = errors[:3]
        ok = not errors
        rec["events"] = {i: m.events for i, m in enumerate(members)}
    finally:
        rec["assigns"] = sum(1 for m in members for e in m.events if e[1] == "assign")
        if not ok:
            rec["events"] = {i: m.events for i, m in enumerate(members)}
        cpu.stop(rec)
        for m in members:
            if not m.stop.is_set():
                m.close()
        emit(rec, ok)


# ----- commits ------------------------------------------------------------------------------

def cmd_commits(a):
    need_confluent()
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    group = f"bench-commits-{os.getpid()}-{time.time_ns()}"
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "partition.assignment.strategy": "range"})
    c.subscribe([a.topic])
    deadline = time.monotonic() + a.timeout
    while not c.assignment():
        c.poll(0.05)
        if time.monotonic() > deadline:
            emit({"kind": "commits", "tag": a.tag, "failed": "no assignment"}, False)
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})  # kept alive: its futures die with it
    d = admin.describe_consumer_groups([group])[group].result(timeout=10)
    lat, errors = [], []

    def commit(offset):
        t = time.perf_counter()
        try:
            done = c.commit(offsets=[TopicPartition(a.topic, 0, offset)], asynchronous=False)
            errors.extend(str(tp.error) for tp in done if tp.error is not None)
        except KafkaException as e:
            errors.append(str(e.args[0]))
        return time.perf_counter() - t

    for i in range(a.warmup):
        commit(i + 1)
    cpu = BrokersCpu([int(x.split(":")[1]) for x in a.node_pids.split(",")]) if a.node_pids else BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    for i in range(a.n):
        lat.append(commit(a.warmup + i + 1))
        c.poll(0)
        if time.monotonic() > deadline:
            break
    secs = time.perf_counter() - t0
    got = c.committed([TopicPartition(a.topic, 0)], timeout=10)[0].offset
    ms = lambda x: round(1000 * x, 3)  # noqa: E731
    rec = {"kind": "commits", "tag": a.tag, "topic": a.topic, "n": len(lat), "secs": round(secs, 3),
           "commits_per_s": round(len(lat) / secs), "p50_ms": ms(pct(lat, .50)), "p90_ms": ms(pct(lat, .90)),
           "p99_ms": ms(pct(lat, .99)), "max_ms": ms(max(lat)), "coordinator": d.coordinator.id,
           "errors": errors[:3], "committed": got}
    cpu.stop(rec)
    if "cpu_s" in rec:
        rec["broker_cpu_us_per_commit"] = round(rec["cpu_s"] / len(lat) * 1e6)
    c.close()
    emit(rec, not errors and len(lat) == a.n and got == a.warmup + a.n)


# ----- consume ------------------------------------------------------------------------------

def cmd_consume(a):
    need_confluent()
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    # As bench_clients.py consume, plus what a group needs to start at the beginning.
    conf = {"bootstrap.servers": BOOTSTRAP, "group.id": f"bench-{a.mode}-{os.getpid()}-{time.time_ns()}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    if a.backoff_ms is not None:
        conf["fetch.queue.backoff.ms"] = a.backoff_ms
    consumer = Consumer(conf)
    parts = sorted(consumer.list_topics(a.topic, timeout=10).topics[a.topic].partitions)
    if a.mode == "subscribe-committed":
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka.admin import AdminClient
        request = ConsumerGroupTopicPartitions(conf["group.id"], [TopicPartition(a.topic, p, 0) for p in parts])
        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})  # kept alive: its futures die with it
        r = admin.alter_consumer_group_offsets([request])[conf["group.id"]]
        bad = [tp for tp in r.result(timeout=30).topic_partitions if tp.error is not None]
        if bad:
            emit({"kind": f"consume-{a.mode}", "tag": a.tag, "failed": f"committing offsets 0: {bad}"}, False)
    cpu = BrokerCpu(a.broker_pid)
    n = nbytes = errors = 0
    first = None
    cpu.start()
    t0 = time.perf_counter()
    if a.mode == "assign":
        consumer.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in parts])
    else:
        consumer.subscribe([a.topic])
    deadline = t0 + a.timeout
    while n < a.expect and time.perf_counter() < deadline:
        for m in consumer.consume(num_messages=10_000, timeout=1.0):
            if m.error():
                errors += 1
                continue
            if first is None:
                first = time.perf_counter()
            n += 1
            nbytes += len(m.value())
    end = time.perf_counter()
    secs = end - t0
    rec = {"kind": f"consume-{a.mode}", "tag": a.tag, "topic": a.topic, "partitions": len(parts),
           "expected": a.expect, "n": n, "secs": round(secs, 3), "msgs_per_s": round(n / secs),
           "first_record_s": round(first - t0, 3) if first else None,
           "steady_msgs_per_s": round((n - 1) / (end - first)) if first and end > first else None,
           "MB_per_s": round(nbytes / secs / 1e6, 1), "errors": errors, "assigned": len(consumer.assignment())}
    cpu.stop(rec)
    consumer.close()
    emit(rec, errors == 0 and n == a.expect)


def cmd_wait_brokers(a):
    need_confluent()
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    deadline = time.monotonic() + a.timeout
    while len(admin.list_topics(timeout=10).brokers) < a.brokers:
        if time.monotonic() > deadline:
            sys.exit(f"metadata did not list {a.brokers} brokers within {a.timeout} s")
        time.sleep(0.2)
    if not a.offsets_topic:
        return
    # A group consumer looks for its coordinator at once, and the first FindCoordinator creates
    # the offsets topic. (Repeated AdminClient describe calls while it was being created tripped
    # an assertion in librdkafka 2.16.0's admin code: rd_kafka_enq_once_del_source_return.)
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "bench-warm-up"})
    try:
        while True:
            c.poll(0.1)
            t = c.list_topics("__consumer_offsets", timeout=10).topics.get("__consumer_offsets")
            if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
                return
            if time.monotonic() > deadline:
                sys.exit(f"__consumer_offsets not led everywhere within {a.timeout} s: {t.error if t else 'not listed'}")
    finally:
        c.close()


def sim_figures(timeline, t0_ms, members):
    """(join_s, leave figures or None) from a `sim run --timeline` table."""
    rows = []
    for line in timeline.splitlines():
        f = line.split(None, 5)
        if len(f) >= 4 and f[0].isdigit():
            at, member, event = int(f[0]), f[2], f[3]
            generation = int(f[4]) if event in ("joined", "owns") else None
            rows.append((at, member, event, generation, line))
    owners = defaultdict(dict)   # generation -> member -> at_ms of its "owns"
    for at, member, event, generation, _ in rows:
        if event == "owns":
            owners[generation][member] = at
    full = [g for g in sorted(owners) if len(owners[g]) == members]
    if not full:
        return None, None
    join_s = (max(owners[full[0]].values()) - t0_ms) / 1000
    churn = [(at, member, event) for at, member, event, _, _ in rows if event in ("left", "crashed", "stalled")]
    if not churn or churn[0][2] != "left":
        return join_s, None
    _, leaver, _ = churn[0]
    start = max(at for at, member, event, _, _ in rows if member == leaver and event == "revoked" and at <= churn[0][0])
    later = [g for g in sorted(owners) if min(owners[g].values()) > start and len(owners[g]) == members - 1
             and leaver not in owners[g]]
    if not later or (len(churn) > 1 and churn[1][0] < max(owners[later[0]].values())):
        return join_s, None       # another churn action inside the rebalance: no clean figure
    done = max(owners[later[0]].values())
    revokes = [at for at, member, event, _, _ in rows if event == "revoked" and member != leaver and start < at <= done]
    leave = {"leave_s": (done - start) / 1000}
    if revokes:
        leave["leave_notice_s"] = (max(revokes) - start) / 1000
        leave["leave_rebalance_s"] = (done - min(revokes)) / 1000
    return join_s, leave


def cmd_sim(a):
    import subprocess
    import tempfile
    import tomllib
    with open(a.scenario, "rb") as f:
        spec = tomllib.load(f)
    members = spec["groups"][0]["members"]
    hb = spec["groups"][0].get("heartbeat_interval_ms", 500)
    ok = True
    for seed in range(a.seeds):
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as trace:
            out = subprocess.run([a.sim, "run", a.scenario, "--seed", str(seed), "--timeline", "--trace", trace.name],
                                 capture_output=True, text=True, timeout=a.timeout)
            t0 = next((json.loads(line)["t"] for line in open(trace.name) if '"topics_created"' in line), None)
        rec = {"kind": "sim-rebalance", "tag": f"{members} members, heartbeat {hb} ms (simulated)", "seed": seed}
        if out.returncode != 0 or t0 is None:
            rec["failed"] = f"sim exited {out.returncode}: {out.stderr[-300:]}"
            ok = False
        else:
            join_s, leave = sim_figures(out.stdout, t0, members)
            rec["join_s"] = join_s
            rec.update(leave or {})
        rec["ok"] = "failed" not in rec
        print(json.dumps(rec), flush=True)
    sys.exit(0 if ok else 1)


# ----- summary ------------------------------------------------------------------------------

def uncontended(ds):
    return [d for d in ds if d.get("other_cores", 0) <= 0.25] or ds


def cmd_summarize(a):
    rows = defaultdict(list)
    for path in a.files:
        for line in open(path):
            if line.startswith("{"):
                d = json.loads(line)
                if "tag" in d:
                    rows[(d["kind"], d["tag"])].append(d)

    def med(kind, tag, key):
        ds = [d for d in rows.get((kind, tag), []) if d.get(key) is not None]
        if not ds:
            return "—"
        # As bench_clients.py: steps during which other programs took more than 0.25 cores are
        # left out when uncontended runs of the same measurement exist, and counted in a note.
        clean = [d for d in ds if d.get("other_cores", 0) <= 0.25]
        contended = len(ds) - len(clean)
        ds = clean or ds
        xs = [d[key] for d in ds]
        bad = sum(not d["ok"] for d in ds)
        f = (lambda x: f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k") if "per_s" in key and max(xs) >= 10_000 else \
            (lambda x: f"{x:,.0f}" if "per_s" in key or key.endswith("per_commit") else f"{x:.3f}")
        left_out = f"{contended} contended run(s) left out" if contended and clean else (f"all {len(ds)} contended" if contended else "")
        notes = [s for s in (f"{bad} of {len(ds)} FAILED" if bad else "", left_out) if s]
        spread = f" [{f(min(xs))}–{f(max(xs))}]" if len(xs) > 1 else ""
        return f"{f(statistics.median(xs))}{spread}, n={len(xs)}" + (f" ({'; '.join(notes)})" if notes else "")

    out = ["| measurement | median [min–max], runs |", "|---|---|"]
    for (kind, tag) in sorted(rows):
        keys = {"rebalance": ["join_s", "join_generations", "leave_s", "leave_notice_s", "leave_rebalance_s"],
                "sim-rebalance": ["join_s", "leave_s", "leave_notice_s", "leave_rebalance_s"],
                "commits": ["commits_per_s", "p50_ms", "p99_ms", "max_ms", "broker_cpu_us_per_commit"],
                "consume-assign": ["msgs_per_s", "steady_msgs_per_s", "first_record_s"],
                "consume-subscribe": ["msgs_per_s", "steady_msgs_per_s", "first_record_s"],
                "consume-subscribe-committed": ["msgs_per_s", "steady_msgs_per_s", "first_record_s"]}.get(kind, [])
        for key in keys:
            out.append(f"| {kind} {tag}: {key} | {med(kind, tag, key)} |")
    # Group against assign mode, per tag: the ratio of the medians.
    for kind in ("consume-subscribe", "consume-subscribe-committed"):
        for tag in sorted({t for (k, t) in rows if k == kind}):
            for key in ("msgs_per_s", "steady_msgs_per_s"):
                g = [d[key] for d in uncontended(rows.get((kind, tag), [])) if d.get(key)]
                s = [d[key] for d in uncontended(rows.get(("consume-assign", tag), [])) if d.get(key)]
                if g and s:
                    out.append(f"| {kind} / assign {tag}: {key} | {statistics.median(g) / statistics.median(s):.3f} |")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def step(name, fn):
        p = sub.add_parser(name)
        p.add_argument("--tag", default="")
        p.add_argument("--broker-pid", type=int)
        p.add_argument("--timeout", type=float, default=120)
        p.set_defaults(fn=fn)
        return p

    p = step("rebalance", cmd_rebalance)
    p.add_argument("--topic", required=True)
    p.add_argument("--members", type=int, default=10)
    p.add_argument("--heartbeat-ms", type=int, help="heartbeat.interval.ms (default: the client's, 3 s; KIP-848: the broker's, only recorded)")
    p.add_argument("--protocol", choices=["classic", "consumer"], default="classic", help="group.protocol")
    p.add_argument("--settle-s", type=float, default=1.0, help="wait between join and leave")
    p.add_argument("--jitter-s", type=float, default=3.0, help="plus up to this much, drawn at random")
    p = step("commits", cmd_commits)
    p.add_argument("--topic", required=True)
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--node-pids", help="ID:PID,... of a cluster's brokers: their CPU together is reported")
    p = step("consume", cmd_consume)
    p.add_argument("--topic", required=True)
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--mode", choices=["assign", "subscribe", "subscribe-committed"], required=True)
    p.add_argument("--backoff-ms", type=int)
    p = step("wait-brokers", cmd_wait_brokers)
    p.add_argument("--brokers", type=int, required=True)
    p.add_argument("--offsets-topic", action="store_true")
    p = step("sim", cmd_sim)
    p.add_argument("--sim", required=True, help="the simulator binary (built with --cfg madsim)")
    p.add_argument("--scenario", required=True)
    p.add_argument("--seeds", type=int, default=20)
    p = sub.add_parser("summarize")
    p.add_argument("files", nargs="+")
    p.set_defaults(fn=cmd_summarize)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
