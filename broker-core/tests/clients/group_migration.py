#!/usr/bin/env python3
"""KIP-848's online migration with confluent-kafka: a rolling upgrade of a classic group to the
consumer protocol and back, while records are produced.

One group over a topic of 4 partitions (the broker's --num-partitions), each member polling in
a thread of its own, records produced all along:
1. classic A and B (`group.protocol=classic`, `--strategy`) split the partitions;
2. consumer-protocol C1 (`group.protocol=consumer`) joins: the classic group becomes a consumer
   group (described as CONSUMER, three members), and C1 gets a share;
3. A is replaced by consumer-protocol C2, then B by C3: only consumer-protocol members left;
4. classic D1 joins the consumer group; C1 and C2 leave and classic D2 joins; C3 leaves last:
   the group goes back to classic (listed as CLASSIC) and D1 and D2 split every partition.
Each phase waits until every partition is owned and every named member has a share.

Checked all along, from the clients' own rebalance callbacks (recorded under one lock; a member
lets a partition go in its callback, taking `--revoke-ms` as an application finishing its work,
before its client tells the coordinator so): a partition is never given to a member while
another still holds it. Members commit (synchronously) what they
read after each poll and when a partition is taken from them; the first record a member reads
of a partition it is given is at the last offset acknowledged as committed there (or at one a
commit sent after it asked for), so commits carry over every conversion. At the end every
record produced was read at least once, and the committed offset of every partition is its end.
"""

import argparse
import json
import threading
import time

from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, expect, fail, main

call_timeout_s = 20
phase_timeout_s = 60


class Group:
    """What every member of the group did, under one lock: the members run in threads of
    their own, as independent consumers do."""

    def __init__(self, topic, revoke_s):
        self.topic = topic
        self.revoke_s = revoke_s
        self.lock = threading.Lock()
        self.owner = {}  # partition -> the member holding it
        self.acked = {}  # partition -> last offset acknowledged as committed
        self.attempted = {}  # partition -> every offset a commit was sent for
        self.read = set()  # (partition, offset) read by anyone
        self.handovers = 0
        self.failed_commits = 0
        self.failure = None  # the first mismatch a member thread met

    def given(self, name, partitions):
        with self.lock:
            for p in partitions:
                holder = self.owner.get(p)
                expect(holder is None or holder == name, f"{self.topic}-{p} given to {name} while {holder} still holds it")
                self.owner[p] = name
            self.handovers += len(partitions)

    def gone(self, name, partitions):
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == name:
                    del self.owner[p]

    def held_by(self, name):
        with self.lock:
            return sorted(p for p, holder in self.owner.items() if holder == name)

    def check(self):
        if self.failure is not None:
            fail(self.failure)


class Member(threading.Thread):
    """One consumer, polling in its own thread until told to leave: it commits what it read
    after each poll and what it read of a partition before giving it up."""

    def __init__(self, name, group, bootstrap, group_id, protocol, strategy):
        super().__init__(name=name, daemon=True)
        self.group = group
        self.next = {}  # partition -> offset after the last record read
        self.fresh = set()  # partitions given and not read from since
        self.leaving = threading.Event()
        self.left = threading.Event()
        self.config = {"bootstrap.servers": bootstrap, "group.id": group_id, "client.id": f"migration-{name}",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 2048,
                       "group.protocol": protocol}
        if protocol == "classic":
            self.config.update({"partition.assignment.strategy": strategy, "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
        self.start()

    def run(self):
        try:
            self.consumer = Consumer(self.config)
            self.consumer.subscribe([self.group.topic], on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost)
            while not self.leaving.is_set():
                self.poll()
            self.commit()
            self.consumer.close()
            self.forget(list(self.next) + self.group.held_by(self.name))
        except Exception as e:  # noqa: BLE001 (a mismatch or a client error: the main thread fails with it)
            self.group.failure = self.group.failure or f"{self.name}: {e}"
        finally:
            self.left.set()

    def on_assign(self, consumer, partitions):
        ps = [tp.partition for tp in partitions]
        self.group.given(self.name, ps)
        self.fresh.update(ps)

    def on_revoke(self, consumer, partitions):
        ps = [tp.partition for tp in partitions]
        # An application finishing its work on what it gives up: a coordinator that handed a
        # partition on before its owner let go would be caught giving it meanwhile.
        time.sleep(self.group.revoke_s)
        # What was read of a partition given up is committed, so its next owner starts there.
        self.commit(ps)
        self.forget(ps)

    def on_lost(self, consumer, partitions):
        self.forget([tp.partition for tp in partitions])

    def forget(self, ps):
        for p in ps:
            self.next.pop(p, None)
            self.fresh.discard(p)
        self.group.gone(self.name, ps)

    def commit(self, partitions=None):
        ps = [p for p in (self.next if partitions is None else partitions) if p in self.next]
        if not ps:
            return
        offsets = [TopicPartition(self.group.topic, p, self.next[p]) for p in ps]
        with self.group.lock:
            for tp in offsets:
                self.group.attempted.setdefault(tp.partition, set()).add(tp.offset)
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException:
            # Refused (a generation or member epoch the group has left): the partition's next
            # owner starts at an earlier commit, and reads some records again.
            with self.group.lock:
                self.group.failed_commits += 1
            return
        with self.group.lock:
            for tp in done:
                if tp.error is None:
                    self.group.acked[tp.partition] = tp.offset
                else:
                    self.group.failed_commits += 1

    def poll(self):
        for msg in self.consumer.consume(num_messages=20, timeout=0.05):
            expect(msg.error() is None, f"consumer error {msg.error()}")
            p, offset = msg.partition(), msg.offset()
            with self.group.lock:
                if p in self.fresh:
                    self.fresh.discard(p)
                    acked = self.group.acked.get(p, 0)
                    # Where the last acknowledged commit left it, or at a commit sent after it
                    # (acknowledged to its sender after this member's fetch of it).
                    expect(offset == acked or (offset > acked and offset in self.group.attempted.get(p, ())),
                           f"started {self.group.topic}-{p} at {offset}; last acknowledged commit {acked}")
                self.group.read.add((p, offset))
            self.next[p] = offset + 1
        self.commit()

    def close(self):
        """Commits, leaves and closes (in its thread); it holds nothing after."""
        self.leaving.set()
        expect(self.left.wait(call_timeout_s), f"{self.name} did not close within {call_timeout_s} s")
        self.group.check()


class Producing:
    """Records produced a few at a time between polls, each where its delivery report says."""

    def __init__(self, bootstrap, topic):
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": 30000})
        self.n = 0
        self.delivered = set()

    def some(self, count=4):
        for _ in range(count):
            self.producer.produce(self.topic, value=f"m-{self.n}".encode(), partition=self.n % 4, on_delivery=self.report)
            self.n += 1
        self.producer.poll(0)

    def report(self, err, msg):
        expect(err is None, f"delivery failed: {err}")
        self.delivered.add((msg.partition(), msg.offset()))

    def flush(self):
        expect(self.producer.flush(30) == 0, "records undelivered after flush(30 s)")


def phase(what, group, members, producing, named, partitions):
    """Produces while the members poll, until every partition is owned, each of `named` holds a
    share, and everything delivered so far was read."""
    deadline = Deadline(phase_timeout_s, what)
    while True:
        group.check()
        producing.some()
        time.sleep(0.05)
        shares = {m.name: group.held_by(m.name) for m in members if not m.left.is_set()}
        with group.lock:
            owned = sorted(group.owner) == partitions
        if owned and all(shares.get(n) for n in named):
            producing.flush()
            while True:
                group.check()
                with group.lock:
                    if producing.delivered <= group.read:
                        return shares
                deadline.check(f"reading what was produced; owners {group.owner}")
                time.sleep(0.05)
        deadline.check(f"owners {group.owner}, shares {shares}")


def described(admin, group_id):
    futures = admin.describe_consumer_groups([group_id], request_timeout=call_timeout_s)
    try:
        return futures[group_id].result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"describe_consumer_groups({group_id}) failed: {e.args[0]}")


def listed_as(admin, group_id, kind):
    try:
        r = admin.list_consumer_groups(request_timeout=call_timeout_s, types={kind}).result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"list_consumer_groups({kind}) failed: {e.args[0]}")
    return any(g.group_id == group_id for g in r.valid)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--strategy", default="range", choices=["range", "roundrobin", "cooperative-sticky"])
    ap.add_argument("--revoke-ms", type=int, default=500, help="how long a member takes to give partitions up")
    args = ap.parse_args()
    bootstrap, topic, group_id = args.bootstrap, args.topic, args.group
    producing = Producing(bootstrap, topic)
    producing.some(40)
    producing.flush()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = confluent_partitions(admin, topic, Deadline(20, "metadata"))
    expect(partitions == [0, 1, 2, 3], f"{topic}: partitions {partitions}")
    group = Group(topic, args.revoke_ms / 1000)
    member = lambda name, protocol: Member(name, group, bootstrap, group_id, protocol, args.strategy)
    started = time.monotonic()
    timeline = {}

    a, b = member("A", "classic"), member("B", "classic")
    members = [a, b]
    timeline["classic"] = phase("classic A and B splitting the partitions", group, members, producing, ["A", "B"], partitions)
    expect(listed_as(admin, group_id, ConsumerGroupType.CLASSIC), "not listed as a classic group")

    c1 = member("C1", "consumer")
    members.append(c1)
    timeline["upgraded"] = phase("C1 (consumer protocol) upgrading the group", group, members, producing, ["A", "B", "C1"], partitions)
    d = described(admin, group_id)
    expect(d.type == ConsumerGroupType.CONSUMER, f"described as {d.type} after the upgrade")
    expect(sorted(m.client_id for m in d.members) == ["migration-A", "migration-B", "migration-C1"], f"described members {[m.client_id for m in d.members]}")
    described_parts = [tp.partition for m in d.members for tp in m.assignment.topic_partitions]
    expect(len(described_parts) == len(set(described_parts)), f"a partition described under two members: {described_parts}")
    expect(listed_as(admin, group_id, ConsumerGroupType.CONSUMER), "not listed as a consumer group")

    a.close()
    c2 = member("C2", "consumer")
    members.append(c2)
    timeline["A replaced"] = phase("C2 replacing A", group, members, producing, ["B", "C1", "C2"], partitions)
    b.close()
    c3 = member("C3", "consumer")
    members.append(c3)
    timeline["B replaced"] = phase("C3 replacing B", group, members, producing, ["C1", "C2", "C3"], partitions)

    d1 = member("D1", "classic")
    members.append(d1)
    timeline["D1 joined"] = phase("classic D1 joining the consumer group", group, members, producing, ["D1"], partitions)
    c1.close()
    c2.close()
    d2 = member("D2", "classic")
    members.append(d2)
    timeline["C1, C2 replaced"] = phase("classic D2 replacing C1 and C2", group, members, producing, ["C3", "D1", "D2"], partitions)
    c3.close()
    timeline["downgraded"] = phase("D1 and D2 taking everything once C3 left", group, members, producing, ["D1", "D2"], partitions)
    deadline = Deadline(30, "the group listed as classic again")
    while not listed_as(admin, group_id, ConsumerGroupType.CLASSIC):
        group.check()
        deadline.check()
        time.sleep(0.1)
    d = described(admin, group_id)
    expect(d.type == ConsumerGroupType.CLASSIC and d.state == ConsumerGroupState.STABLE, f"described as {d.type} {d.state} after the downgrade")

    with group.lock:
        missing = producing.delivered - group.read
    expect(not missing, f"{len(missing)} records never read, e.g. {sorted(missing)[:5]}")
    d1.close()
    d2.close()
    ends = {}
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id, "enable.auto.commit": False})
    for p in partitions:
        _, high = probe.get_watermark_offsets(TopicPartition(topic, p), timeout=call_timeout_s)
        ends[p] = high
    committed = {tp.partition: tp.offset for tp in probe.committed([TopicPartition(topic, p) for p in partitions], timeout=call_timeout_s)}
    probe.close()
    expect(committed == ends, f"committed {committed}, log ends {ends}")
    print(json.dumps({"strategy": args.strategy, "records": producing.n, "read": len(group.read), "handovers": group.handovers,
                      "refused_commits": group.failed_commits, "seconds": round(time.monotonic() - started, 1),
                      "shares": timeline}))


if __name__ == "__main__":
    main(run)
