#!/usr/bin/env python3
"""A consumer group rides out the SIGKILL of its coordinator: no acknowledged commit is lost.

Run by `tests/all/real_cluster/groups.rs` against a three-broker cluster whose offsets topic has
replication factor 3. Steps, each with its own deadline:

1. Produce --n keyed records to --topic (acks=all, idempotent) and note where each landed.
2. Every partition of `__consumer_offsets` (created by a throwaway group consumer's first
   FindCoordinator) must have --replicas replicas, all in sync. Pick the group: the first of
   `<--group>-0`, `<--group>-1`, ... whose coordinator, as describe_consumer_groups() reports
   it, is not broker --avoid (the controller, which the test must not kill).
3. Two confluent-kafka consumers (range; `--protocol consumer`: KIP-848 with the broker's range
   assignor; manual synchronous commits of the offset after the last
   record read, every --commit-every records per member) split the topic's partitions and read,
   paced at --rate records/s so the kill lands mid-consumption, with a small prefetch
   (`queued.min.messages`, `max.partition.fetch.bytes`) so that most records are fetched only
   after the kill. Every commit the client saw succeed is written down.
4. After --kill-after records: describe_consumer_groups() must show the group STABLE with both
   members at the chosen coordinator. Commits stop (so nothing is in flight when the broker
   dies), --ready is written as JSON {"group", "coordinator"}, and the consumers keep reading
   until the test, having SIGKILLed that broker, creates --killed.
5. Recovery, within --recovery-s-max of seeing --killed, while the consumers keep reading:
   list_consumer_group_offsets() must answer (from the new coordinator) with, for every
   partition, an offset at least the highest commit acknowledged before the kill; then commits
   resume and each member must get one acknowledged; describe_consumer_groups() must show the
   group STABLE at another coordinator with both members owning every partition between them;
   and the consumers must read --read-after-kill more records.
6. The consumers read to the end; every produced record must have been read at least once, each
   at the partition and offset of its delivery report with its key and value. They commit their
   last offsets; committed() and list_consumer_group_offsets() must then both give every
   partition's end offset.

Prints one JSON line: the group, old and new coordinator, when each recovery step was reached
(seconds after --killed was seen), commits acknowledged and failed before/after the kill, reads,
re-reads.
"""

import argparse
import json
import os
import time

from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, expect, fail, main

offsets_topic = "__consumer_offsets"
# One admin call; a call sent to the dead coordinator must give up soon enough to be retried.
admin_call_s = 5


def record(i):
    return f"ck-key-{i:06d}".encode(), f"ck-value-{i:06d}".encode()


def produce(bootstrap, topic, n):
    """{(partition, offset): i} from the delivery reports of N records (acks=all, idempotent)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.num.messages": 50, "message.timeout.ms": 30000})
    reports = []
    for i in range(n):
        key, value = record(i)
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=lambda err, msg: reports.append((err, msg)))
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(45)
    expect(left == 0, f"{topic}: {left} of {n} records undelivered after flush(45 s)")
    at = {}
    for err, msg in reports:
        if err is not None:
            fail(f"{topic}: delivery of {msg.key()!r} failed: {err}")
        at[(msg.partition(), msg.offset())] = int(msg.key().decode().rsplit("-", 1)[1])
    expect(sorted(at.values()) == list(range(n)), f"{topic}: delivery reports do not cover records 0..{n} once each")
    return at


def describe(admin, group):
    """describe_consumer_groups() of one group, or the error as a string."""
    try:
        return admin.describe_consumer_groups([group], request_timeout=admin_call_s)[group].result(timeout=admin_call_s + 1)
    except KafkaException as e:
        return str(e.args[0])


def choose_group(admin, prefix, avoid, deadline):
    """(group, coordinator id): the first `prefix-i` whose coordinator is not broker `avoid`.

    The first FindCoordinator creates the offsets topic, so the first answers may be errors."""
    tried = {}
    while True:
        for i in range(32):
            group = f"{prefix}-{i}"
            d = describe(admin, group)
            if isinstance(d, str) or d.coordinator is None:
                tried[group] = d if isinstance(d, str) else "no coordinator"
                break  # the offsets topic is not ready; ask again from the first candidate
            tried[group] = d.coordinator.id
            if d.coordinator.id != avoid:
                return group, d.coordinator.id
        deadline.check(f"coordinators so far: {tried}")
        time.sleep(0.2)


def wait_offsets_topic_replicated(admin, replicas, deadline, meanwhile):
    """Every partition of the offsets topic on `replicas` brokers, all of them in sync."""
    while True:
        meanwhile()
        why = None
        try:
            t = admin.list_topics(offsets_topic, timeout=admin_call_s).topics.get(offsets_topic)
            if t is None or t.error is not None or not t.partitions:
                why = f"{offsets_topic}: {t.error if t is not None else 'not listed'}"
            else:
                for p in t.partitions.values():
                    if len(p.replicas) != replicas or len(p.isrs) != replicas:
                        why = f"{offsets_topic}-{p.id}: replicas {p.replicas}, ISR {p.isrs}; want {replicas} of each"
                        break
                if why is None:
                    return {p.id: p.leader for p in t.partitions.values()}
        except KafkaException as e:
            why = f"metadata: {e.args[0]}"
        deadline.check(why)
        time.sleep(0.1)


class Member:
    """One consumer of the group: what it read, what it committed, and which commits failed."""

    def __init__(self, name, bootstrap, group, topic, log, protocol):
        self.name, self.topic, self.log = name, topic, log
        self.reads = []  # (partition, offset, key, value)
        self.next = {}  # partition -> offset after the last record read
        self.acked = []  # (seconds since start, partition, offset) of each acknowledged commit
        self.failed = []  # (seconds since start, error) of each failed commit
        self.uncommitted = 0
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"coord-kill-{name}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # A small prefetch: most records must be fetched after the kill, not before it.
            "max.partition.fetch.bytes": 4096,
            "queued.min.messages": 200,
            "fetch.wait.max.ms": 100,
        }
        if protocol == "consumer":
            # KIP-848: the broker's range assignor; its group.consumer.* settings time the group.
            config.update({"group.protocol": "consumer", "group.remote.assignor": "range"})
        else:
            config.update({"partition.assignment.strategy": "range", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic], on_revoke=self.on_revoke)

    def on_revoke(self, consumer, partitions):
        # No commit here: while commits are paused around the kill nothing may be in flight,
        # and a partition's next owner re-reading from the last commit is allowed (at least once).
        self.log.append((self.name, "revoke", sorted(tp.partition for tp in partitions)))
        for tp in partitions:
            self.next.pop(tp.partition, None)

    def assignment(self):
        return sorted(tp.partition for tp in self.consumer.assignment())

    def commit(self, t0):
        """Commits the offset after the last record read of each owned partition, synchronously.

        Returns True if the commit was acknowledged (or there was nothing to commit)."""
        owned = set(self.assignment())
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(self.next.items()) if p in owned]
        if not offsets:
            return True
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            self.failed.append((round(time.monotonic() - t0, 3), str(e.args[0])))
            return False
        errors = [f"{tp.partition}: {tp.error}" for tp in done if tp.error is not None]
        if errors:
            self.failed.append((round(time.monotonic() - t0, 3), "; ".join(errors)))
            return False
        now = round(time.monotonic() - t0, 3)
        self.acked.extend((now, tp.partition, tp.offset) for tp in done)
        self.uncommitted = 0
        return True

    def poll(self, max_records):
        for msg in self.consumer.consume(num_messages=max_records, timeout=0.02):
            if msg.error() is not None:
                # Transport errors while a broker dies are librdkafka's to retry; they come as
                # consumer errors, which are not fatal to the consumer.
                if msg.error().fatal():
                    fail(f"{self.name}: fatal consumer error {msg.error()}")
                self.log.append((self.name, "error", str(msg.error())))
                continue
            p, offset = msg.partition(), msg.offset()
            self.reads.append((p, offset, msg.key(), msg.value()))
            self.next[p] = offset + 1
            self.uncommitted += 1


class Group:
    """Both members driven in turn, reads paced at `rate` records/s overall."""

    def __init__(self, members, rate, commit_every):
        self.members, self.rate, self.commit_every = members, rate, commit_every
        self.t0 = time.monotonic()
        self.committing = True

    def reads(self):
        return sum(len(m.reads) for m in self.members)

    def step(self):
        allowed = int(self.rate * (time.monotonic() - self.t0)) - self.reads()
        for m in self.members:
            # A throttled member is not polled: the next step (10 ms on) serves its callbacks.
            if allowed > 0:
                m.poll(min(20, allowed))
                allowed = int(self.rate * (time.monotonic() - self.t0)) - self.reads()
            if self.committing and m.uncommitted >= self.commit_every:
                m.commit(self.t0)
        if allowed <= 0:
            time.sleep(0.01)

    def drive(self, deadline, done, progress):
        while not done():
            deadline.check(progress())
            self.step()


def committed_by_admin(admin, group, topic, partitions):
    """{partition: committed offset} from list_consumer_group_offsets, or an error string."""
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])]
    try:
        r = admin.list_consumer_group_offsets(request, request_timeout=admin_call_s)[group].result(timeout=admin_call_s + 1)
    except KafkaException as e:
        return str(e.args[0])
    errors = [f"{tp.partition}: {tp.error}" for tp in r.topic_partitions if tp.error is not None]
    if errors:
        return "; ".join(errors)
    return {tp.partition: tp.offset for tp in r.topic_partitions}


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True, help="prefix of the group id")
    ap.add_argument("--partitions", type=int, default=6, help="the topic must have this many")
    ap.add_argument("--n", type=int, default=15000)
    ap.add_argument("--rate", type=float, default=1500, help="records read per second, both members together")
    ap.add_argument("--commit-every", type=int, default=100, help="records a member reads between commits")
    ap.add_argument("--kill-after", type=int, default=3000, help="records read before --ready is written")
    ap.add_argument("--read-after-kill", type=int, default=1000)
    ap.add_argument("--avoid", type=int, default=0, help="a broker that must not be the coordinator")
    ap.add_argument("--replicas", type=int, default=3, help="replication factor the offsets topic must have")
    ap.add_argument("--ready", required=True)
    ap.add_argument("--killed", required=True)
    ap.add_argument("--kill-wait-s", type=float, default=30)
    ap.add_argument("--recovery-s-max", type=float, default=20)
    ap.add_argument("--protocol", default="classic", choices=["classic", "consumer"], help="the members' group.protocol")
    args = ap.parse_args()
    topic, n = args.topic, args.n
    expect(args.kill_after + args.read_after_kill < n, "--kill-after plus --read-after-kill must be under --n")

    at = produce(args.bootstrap, topic, n)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    partitions = confluent_partitions(admin, topic, Deadline(20, f"metadata of {topic!r}"))
    expect(partitions == list(range(args.partitions)), f"{topic}: partitions {partitions}, expected {args.partitions}")
    ends = {p: 1 + max(o for (q, o) in at if q == p) for p in partitions}

    # A group consumer's first FindCoordinator creates the offsets topic; the admin calls below
    # come once it is in place. (AdminClient calls retried while it was being created tripped an
    # assertion in librdkafka 2.16.0: rd_kafka_enq_once_del_source_return.)
    warm_up = Consumer({"bootstrap.servers": args.bootstrap, "group.id": f"{args.group}-warm-up"})
    offsets_leaders = wait_offsets_topic_replicated(admin, args.replicas, Deadline(30, f"{offsets_topic} on {args.replicas} in-sync replicas"),
                                                    lambda: warm_up.poll(0.1))
    warm_up.close()
    group, coordinator = choose_group(admin, args.group, args.avoid, Deadline(30, f"a group coordinated by a broker other than {args.avoid}"))

    log = []
    members = [Member(name, args.bootstrap, group, topic, log, args.protocol) for name in ("A", "B")]
    g = Group(members, args.rate, args.commit_every)
    t0 = g.t0
    assigned = lambda: {m.name: m.assignment() for m in members}

    def split():
        a = assigned()
        return all(a.values()) and sorted(a["A"] + a["B"]) == partitions

    def read_everywhere():
        # Every partition read by its current owner: a total count alone can leave a partition
        # its new owner has not polled yet after a rebalance, with nothing to commit for it.
        return sorted(p for m in members for p in m.next if p in m.assignment()) == partitions

    describe_progress = lambda: f"assignments {assigned()}, {g.reads()} records read, log {log[-5:]}"
    g.drive(Deadline(60, f"two consumers of {group!r} splitting {partitions}, reading {args.kill_after} records and every partition"),
            lambda: split() and g.reads() >= args.kill_after and read_everywhere(), describe_progress)

    # Before the kill: the group as the coordinator sees it.
    for m in members:
        expect(m.commit(t0), f"{m.name}: the last commit before the kill failed: {m.failed[-1:]}")
    d = describe(admin, group)
    expect(not isinstance(d, str), f"describe_consumer_groups({group!r}) before the kill: {d}")
    expect(d.state == ConsumerGroupState.STABLE and len(d.members) == 2,
           f"{group!r} before the kill: {d.state} with {len(d.members)} members, expected STABLE with 2")
    expect(d.coordinator.id == coordinator, f"{group!r} moved from coordinator {coordinator} to {d.coordinator.id} before the kill")
    before = {}
    for m in members:
        for (_, p, o) in m.acked:
            before[p] = max(before.get(p, -1), o)
    expect(sorted(before) == partitions, f"commits acknowledged before the kill cover partitions {sorted(before)}, not all of {partitions}")
    reads_at_ready = g.reads()
    g.committing = False
    with open(args.ready + ".tmp", "w") as f:
        json.dump({"group": group, "coordinator": coordinator}, f)
    os.rename(args.ready + ".tmp", args.ready)

    kill_deadline = Deadline(args.kill_wait_s, f"the test creating {args.killed} after SIGKILLing broker {coordinator}")
    g.drive(kill_deadline, lambda: os.path.exists(args.killed), lambda: f"{g.reads()} records read")
    killed_at = time.monotonic()
    reads_at_kill = g.reads()
    expect(reads_at_kill < n, f"all {n} records were read before the kill; the kill was not mid-consumption")

    # Recovery, with the consumers reading all along.
    since = lambda: round(time.monotonic() - killed_at, 3)
    reached = {}
    deadline = Deadline(args.recovery_s_max, f"recovery after broker {coordinator} (coordinator of {group!r}) was killed")
    pending = {"offsets": None, "describe": None}
    last = {"offsets": None, "describe": None}

    # Two librdkafka admin-client defects decide how the group is asked about after the kill.
    # Its coordinator cache lives metadata.max.age.ms (15 min): a request for a cached
    # coordinator that is down waits for it until the request times out, without asking
    # FindCoordinator again (rdkafka_coord.c), so the pre-kill client would time out however
    # soon the group moved (1 run in 7 did). And a coordinator request whose send fails on a
    # dropped connection frees its state twice and aborts the process ("Assertion
    # `eonce->refcnt > 0' failed", librdkafka issues 3663/4605, PR 5397), which asking while
    # FindCoordinator may still name the dead broker provoked (2 runs in 13). So the group is
    # asked about through a fresh client once metadata shows no offsets partition led by the
    # killed broker any more: its FindCoordinator then names a live coordinator.
    recovery_admin = {}

    def offsets_moved():
        """A fresh admin client once every offsets partition's leader is a live broker."""
        try:
            t = admin.list_topics(offsets_topic, timeout=1).topics.get(offsets_topic)
        except KafkaException as e:
            last["describe"] = f"metadata: {e.args[0]}"
            return False
        leaders = {p.id: p.leader for p in t.partitions.values()} if t is not None and t.error is None else {}
        last["describe"] = f"offsets partition leaders {leaders}"
        if not leaders or any(l in (-1, coordinator) for l in leaders.values()):
            return False
        reached["offsets_moved"] = since()
        recovery_admin["client"] = AdminClient({"bootstrap.servers": args.bootstrap})
        return True

    def recovery_step():
        if "reading" not in reached and g.reads() - reads_at_kill >= args.read_after_kill:
            reached["reading"] = since()
        if "offsets_moved" not in reached and not offsets_moved():
            return False
        admin = recovery_admin["client"]
        # Admin calls run in the background so the consumers keep being polled meanwhile.
        if "offsets" not in reached:
            f = pending["offsets"]
            if f is None:
                req = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])]
                pending["offsets"] = admin.list_consumer_group_offsets(req, request_timeout=admin_call_s)[group]
            elif f.done():
                pending["offsets"] = None
                try:
                    r = f.result()
                    errs = [f"{tp.partition}: {tp.error}" for tp in r.topic_partitions if tp.error is not None]
                    got = "; ".join(errs) if errs else {tp.partition: tp.offset for tp in r.topic_partitions}
                except KafkaException as e:
                    got = str(e.args[0])
                last["offsets"] = got
                if not isinstance(got, str):
                    lost = {p: (o, got.get(p)) for p, o in before.items() if got.get(p) is None or got[p] < o}
                    expect(not lost, f"commits lost with coordinator {coordinator}: partition: (acknowledged before the "
                                     f"kill, committed offset read after) {lost}")
                    reached["offsets"] = since()
                    reached["committed_after_kill"] = got
                    g.committing = True
        if "offsets" in reached and "commits" not in reached:
            if all(any(t >= killed_at - t0 for (t, _, _) in m.acked) for m in members if m.next):
                reached["commits"] = since()
            else:
                for m in members:
                    m.uncommitted = max(m.uncommitted, args.commit_every)  # commit at the next step
        if "stable" not in reached:
            f = pending["describe"]
            if f is None:
                pending["describe"] = admin.describe_consumer_groups([group], request_timeout=admin_call_s)[group]
            elif f.done():
                pending["describe"] = None
                try:
                    d = f.result()
                    owned = sorted(tp.partition for m in d.members if m.assignment is not None
                                   for tp in m.assignment.topic_partitions)
                    last["describe"] = f"{d.state} at {d.coordinator.id if d.coordinator else None}, members {len(d.members)}, owning {owned}"
                    if (d.state == ConsumerGroupState.STABLE and d.coordinator is not None and d.coordinator.id != coordinator
                            and len(d.members) == 2 and owned == partitions):
                        reached["stable"] = since()
                        reached["new_coordinator"] = d.coordinator.id
                except KafkaException as e:
                    last["describe"] = str(e.args[0])
        return all(k in reached for k in ("offsets", "commits", "stable", "reading"))

    def recovery_progress():
        failed = [f for m in members for f in m.failed if f[0] >= killed_at - t0][-3:]
        return (f"reached {reached}; last offsets read {last['offsets']}; last describe {last['describe']}; "
                f"{g.reads() - reads_at_kill} records read since the kill; commit failures {failed}; log {log[-5:]}")

    while not recovery_step():
        deadline.check(recovery_progress())
        g.step()

    # To the end: every record read at least once, then the last offsets committed.
    def all_read():
        return {(p, o) for m in members for (p, o, _, _) in m.reads} >= set(at)

    g.rate = 1e9
    g.drive(Deadline(60, "reading every record after recovery"), all_read,
            lambda: f"{len({(p, o) for m in members for (p, o, _, _) in m.reads})} of {n} records read; {describe_progress()}")
    final_deadline = Deadline(30, "the last commits")
    while True:
        if all(m.commit(t0) for m in members):
            break
        final_deadline.check(f"failures {[m.failed[-1:] for m in members]}")
        g.step()
    owned = {p: m for m in members for p in m.assignment()}
    committed = {}
    for p, m in sorted(owned.items()):
        try:
            tp = m.consumer.committed([TopicPartition(topic, p)], timeout=admin_call_s * 2)[0]
        except KafkaException as e:
            fail(f"{m.name}: committed() of partition {p}: {e.args[0]}")
        committed[p] = tp.offset
    expect(committed == ends, f"committed() at the end: {committed}, partitions end at {ends}")
    by_admin = committed_by_admin(recovery_admin["client"], group, topic, partitions)
    expect(by_admin == ends, f"list_consumer_group_offsets at the end: {by_admin}, partitions end at {ends}")
    acked_max = {}
    for m in members:
        for (_, p, o) in m.acked:
            acked_max[p] = max(acked_max.get(p, -1), o)
    expect(all(acked_max[p] <= ends[p] for p in acked_max), f"commits past the end: {acked_max}, ends {ends}")

    seen = {}
    for m in members:
        for (p, o, key, value) in m.reads:
            expect((p, o) in at, f"{m.name} read partition {p} offset {o}, which no delivery report named")
            want = record(at[(p, o)])
            expect((key, value) == want, f"partition {p} offset {o}: read {(key, value)}, produced {want}")
            seen[(p, o)] = seen.get((p, o), 0) + 1
    for m in members:
        m.consumer.close()

    killed_rel = killed_at - t0
    summary = {
        "group": group, "coordinator": coordinator, "new_coordinator": reached["new_coordinator"],
        "offsets_leaders_before": offsets_leaders,
        "recovered_s": max(reached[k] for k in ("offsets", "commits", "stable", "reading")),
        "reached_s": {k: reached[k] for k in ("offsets_moved", "offsets", "commits", "stable", "reading")},
        "committed_before_kill": before, "committed_after_kill": reached["committed_after_kill"],
        "commits_acked": {"before": sum(1 for m in members for (t, _, _) in m.acked if t < killed_rel),
                          "after": sum(1 for m in members for (t, _, _) in m.acked if t >= killed_rel)},
        "commits_failed_after": sorted({e for m in members for (t, e) in m.failed if t >= killed_rel})[:5],
        "reads": {"at_ready": reads_at_ready, "at_kill": reads_at_kill, "total": g.reads(), "n": n},
        "rereads": sum(c - 1 for c in seen.values()),
        "events": log[-10:],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main(run)
