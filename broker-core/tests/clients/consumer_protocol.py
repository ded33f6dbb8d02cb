#!/usr/bin/env python3
"""KIP-848 (`group.protocol=consumer`) with confluent-kafka: describe, list, resume, a static
member's restart, and a regex subscription.

Produces N records to `--topic` (the broker's --num-partitions). Two consumers of group
`--group` (A static, `group.instance.id` "a"; B dynamic) split the partitions by the broker's
`--assignor`, read and commit what they read. Then:
* describe_consumer_groups(): type CONSUMER, state STABLE, the assignor, both members with their
  client ids, and each member's assignment (and target assignment) equal to what it holds;
  list_consumer_groups() lists it under CONSUMER and STABLE, not under CLASSIC; with
  `--seedlog`, `seedlog groups describe` shows the group's epochs and each member's epoch,
  partitions and target;
* A closes and a new A (same instance id) starts within the session timeout: it gets back
  A's partitions exactly and B's assignment never changes (a restart is no rebalance);
* both close; a third consumer C resumes: its first record on every partition is at the offset
  committed there, and it reads to the end, so every record was read at least once;
* a consumer subscribed to `^<topic>-rx-.*` owns nothing until a matching topic is created, then
  gets all its partitions and reads its records.
"""

import argparse
import json
import subprocess
import time

from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from common import Deadline, confluent_partitions, expect, fail, main

call_timeout_s = 20


def produce(bootstrap, topic, n):
    """{(partition, offset): i} from the delivery reports of N records."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.num.messages": 20,
                         "message.timeout.ms": 30000})
    reports = []
    for i in range(n):
        producer.produce(topic, key=f"k-{i}".encode(), value=f"v-{i}".encode(), on_delivery=lambda e, m: reports.append((e, m)))
        producer.poll(0)
    expect(producer.flush(45) == 0, f"{topic}: records undelivered after flush(45 s)")
    at = {}
    for err, msg in reports:
        expect(err is None, f"{topic}: delivery failed: {err}")
        at[(msg.partition(), msg.offset())] = int(msg.key().decode()[2:])
    expect(sorted(at.values()) == list(range(n)), f"{topic}: delivery reports do not cover 0..{n}")
    return at


class Member:
    def __init__(self, name, bootstrap, group, assignor, subscription, instance=None):
        self.name = name
        self.reads, self.next, self.first = [], {}, {}
        config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"kip848-{name}",
                  "group.protocol": "consumer", "group.remote.assignor": assignor,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 2048}
        if instance:
            config["group.instance.id"] = instance
        self.consumer = Consumer(config)
        self.consumer.subscribe(subscription)

    def assignment(self):
        return sorted((tp.topic, tp.partition) for tp in self.consumer.assignment())

    def poll(self, timeout=0.05):
        for msg in self.consumer.consume(num_messages=20, timeout=timeout):
            expect(msg.error() is None, f"{self.name}: consumer error {msg.error()}")
            key = (msg.topic(), msg.partition())
            self.reads.append((msg.topic(), msg.partition(), msg.offset()))
            self.first.setdefault(key, msg.offset())
            self.next[key] = msg.offset() + 1

    def commit(self):
        """Commits the position of each partition it holds now (not of those it gave up)."""
        held = set(self.assignment())
        self.next = {k: o for k, o in self.next.items() if k in held}
        if not self.next:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.next.items()]
        try:
            for tp in self.consumer.commit(offsets=offsets, asynchronous=False):
                expect(tp.error is None, f"{self.name}: commit of {tp.topic}-{tp.partition} failed: {tp.error}")
        except KafkaException as e:
            fail(f"{self.name}: commit failed: {e.args[0]}")


def drive(members, deadline, done, progress):
    while not done():
        deadline.check(progress())
        for m in members:
            m.poll()


def describe(admin, group):
    futures = admin.describe_consumer_groups([group], request_timeout=call_timeout_s)
    try:
        return futures[group].result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"describe_consumer_groups({group}) failed: {e.args[0]}")


def listed(admin, group, **kwargs):
    try:
        r = admin.list_consumer_groups(request_timeout=call_timeout_s, **kwargs).result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"list_consumer_groups({kwargs}) failed: {e.args[0]}")
    expect(not r.errors, f"list_consumer_groups({kwargs}) errors: {r.errors}")
    return [g for g in r.valid if g.group_id == group]


def describe_with_seedlog(seedlog, bootstrap, group, topic, held, members):
    """`seedlog groups describe`: a KIP-848 header, and a member row per client whose
    partitions and target are what it holds."""
    out = subprocess.run([seedlog, "groups", "describe", group, "--bootstrap", bootstrap], capture_output=True, text=True, timeout=60)
    for m in members:
        m.poll()
    expect(out.returncode == 0, f"seedlog groups describe: exit {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    expect("GROUP-EPOCH" in lines[0] and "PROTOCOL-TYPE consumer" in lines[0], f"seedlog's header: {lines[0]!r}")
    header = next((i for i, l in enumerate(lines) if l.startswith("MEMBER-ID")), None)
    expect(header is not None and lines[header].split() == ["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "EPOCH", "PARTITIONS", "TARGET"], f"seedlog's member table: {out.stdout}")
    rows = {l.split()[1]: l.split() for l in lines[header + 1:] if l.strip()}
    for name, parts in held.items():
        want = f"{topic}(" + ",".join(str(p) for _, p in parts) + ")"
        row = rows.get(f"kip848-{name}")
        expect(row is not None and row[5] == want and row[6] == want, f"seedlog shows {row} for {name}, which holds {want}")


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--assignor", default="uniform", choices=["uniform", "range"])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seedlog", help="the seedlog binary: check `seedlog groups describe` too")
    args = ap.parse_args()
    topic, group, bootstrap = args.topic, args.group, args.bootstrap
    at = produce(bootstrap, topic, args.n)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = confluent_partitions(admin, topic, Deadline(20, "metadata"))
    everything = sorted((topic, p) for p in partitions)

    # Two members split the topic.
    a = Member("A", bootstrap, group, args.assignor, [topic], instance="a")
    b = Member("B", bootstrap, group, args.assignor, [topic])
    state = lambda: f"A {a.assignment()} read {len(a.reads)}; B {b.assignment()} read {len(b.reads)}"
    split = lambda: a.assignment() and b.assignment() and sorted(a.assignment() + b.assignment()) == everything and len(a.reads) >= 100 and len(b.reads) >= 100
    drive([a, b], Deadline(60, "two members splitting the topic"), split, state)
    a.commit()
    b.commit()
    held = {"A": a.assignment(), "B": b.assignment()}

    # Describe and list while both are members (polling keeps them in the group).
    deadline = Deadline(30, "the group described as STABLE with both members")
    while True:
        a.poll()
        b.poll()
        d = describe(admin, group)
        if d.state == ConsumerGroupState.STABLE and len(d.members) == 2:
            break
        deadline.check(f"state {d.state}, {len(d.members)} members")
    expect(d.type == ConsumerGroupType.CONSUMER, f"described type {d.type}, expected CONSUMER")
    expect(d.partition_assignor == args.assignor, f"described assignor {d.partition_assignor!r}, expected {args.assignor!r}")
    by_client = {m.client_id: m for m in d.members}
    expect(sorted(by_client) == ["kip848-A", "kip848-B"], f"described members {sorted(by_client)}")
    expect(by_client["kip848-A"].group_instance_id == "a", f"A's instance id {by_client['kip848-A'].group_instance_id!r}")
    for name in ("A", "B"):
        m = by_client[f"kip848-{name}"]
        current = sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        target = sorted((tp.topic, tp.partition) for tp in m.target_assignment.topic_partitions)
        expect(current == held[name] and target == held[name], f"{name}: described {current} (target {target}), holds {held[name]}")
    expect(len(listed(admin, group, types={ConsumerGroupType.CONSUMER}, states={ConsumerGroupState.STABLE})) == 1, "not listed as a STABLE consumer group")
    expect(not listed(admin, group, types={ConsumerGroupType.CLASSIC}), "listed as a classic group")
    if args.seedlog:
        describe_with_seedlog(args.seedlog, bootstrap, group, topic, held, [a, b])

    # A static restart: A's partitions come back to the new A, B's never move.
    a.consumer.close()
    first_a = a
    a = Member("A2", bootstrap, group, args.assignor, [topic], instance="a")
    drive([a, b], Deadline(30, "the restarted static member back in its place"), lambda: a.assignment() == held["A"], state)
    for _ in range(20):
        a.poll()
        b.poll()
        expect(b.assignment() == held["B"], f"B's assignment moved during A's restart: {b.assignment()}, was {held['B']}")
    a.commit()
    b.commit()
    committed = {**{k: v for k, v in b.next.items()}, **{k: v for k, v in a.next.items()}}
    a.consumer.close()
    b.consumer.close()

    # C resumes where the group committed and reads to the end.
    c = Member("C", bootstrap, group, args.assignor, [topic])
    done = lambda: {at[(p, o)] for (_, p, o) in c.reads + first_a.reads + a.reads + b.reads if (p, o) in at} == set(range(args.n))
    drive([c], Deadline(60, "C reading to the end"), done, lambda: f"C {c.assignment()} read {len(c.reads)}")
    for key, offset in committed.items():
        expect(c.first.get(key, offset) == offset, f"{key}: C's first record at {c.first.get(key)}, committed {offset}")
    c.commit()
    c.consumer.close()

    # A regex subscription takes in a topic created after it.
    rx_group, rx_topic = f"{group}-rx", f"{topic}-rx-later"
    r = Member("R", bootstrap, rx_group, args.assignor, [f"^{topic}-rx-.*"])
    for _ in range(20):
        r.poll()
    expect(r.assignment() == [], f"R owns {r.assignment()} before any topic matches")
    futures = admin.create_topics([NewTopic(rx_topic, num_partitions=2, replication_factor=1)])
    try:
        futures[rx_topic].result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"create_topics({rx_topic}) failed: {e.args[0]}")
    rx_at = produce(bootstrap, rx_topic, 100)
    drive([r], Deadline(60, "R reading the topic created after it subscribed"), lambda: len({(p, o) for (_, p, o) in r.reads}) >= len(rx_at),
          lambda: f"R {r.assignment()} read {len(r.reads)}")
    expect(r.assignment() == [(rx_topic, 0), (rx_topic, 1)], f"R owns {r.assignment()}")
    r.consumer.close()
    print(json.dumps({"assignor": args.assignor, "split": held, "resumed_at": {f"{t}-{p}": o for (t, p), o in sorted(committed.items())},
                      "reads": {"A": len(first_a.reads), "A2": len(a.reads), "B": len(b.reads), "C": len(c.reads), "R": len(r.reads)}}))


if __name__ == "__main__":
    main(run)
