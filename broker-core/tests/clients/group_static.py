#!/usr/bin/env python3
"""Static membership (KIP-345): a member that restarts within its session keeps its partitions.

Produces N records over the topic's partitions. Two confluent-kafka consumers (range, an eager
assignor, so any rebalance revokes everything and shows in the callbacks) join group `--group`:
S with group.instance.id `--instance` and a long session, O a dynamic member whose on_assign /
on_revoke calls are counted. Once they split the partitions, S reads from each of its
partitions, commits synchronously and closes: a static member's close sends no LeaveGroup, so
the group keeps it. Then S2, a new consumer with the same instance id, must get S's partitions
back, under a new member id, within `--rejoin-s` seconds, and (N more records produced) read on
each of them from S's committed offset. O must see no rebalance from S's close until two
seconds after S2 got its partitions, and DescribeGroups must show the group Stable with two
members, S2 in place of S. `--static-client-id` (chosen by the Rust test) decides whether S,
whose member id then sorts first, is the group's leader.
"""

import argparse
import json
import time

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, expect, fail, main


def produce(bootstrap, topic, n, prefix):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.num.messages": 20,
                         "message.timeout.ms": 30000})
    errors = []
    for i in range(n):
        producer.produce(topic, key=f"{prefix}-{i}".encode(), value=f"{prefix}-value-{i}".encode(),
                         on_delivery=lambda err, msg: err and errors.append(err))
    expect(producer.flush(45) == 0 and not errors, f"{topic}: produce failed: {errors[:3]}")


class Member:
    def __init__(self, name, bootstrap, group, topic, client_id, instance=None):
        self.name, self.topic = name, topic
        self.events = []
        self.next, self.first = {}, {}
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                "partition.assignment.strategy": "range", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "heartbeat.interval.ms": 500, "max.partition.fetch.bytes": 2048,
                "session.timeout.ms": 30000 if instance else 10000}
        if instance:
            conf["group.instance.id"] = instance
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic], on_assign=lambda c, ps: self.event("assign", ps),
                                on_revoke=lambda c, ps: self.event("revoke", ps))
        self.closed = False

    def event(self, what, partitions):
        self.events.append((round(time.monotonic(), 2), what, sorted(tp.partition for tp in partitions)))

    def assignment(self):
        return [] if self.closed else sorted(tp.partition for tp in self.consumer.assignment())

    def poll(self, timeout):
        for msg in self.consumer.consume(num_messages=100, timeout=timeout):
            if msg.error() is not None:
                fail(f"{self.name}: consumer error {msg.error()}")
            self.first.setdefault(msg.partition(), msg.offset())
            self.next[msg.partition()] = msg.offset() + 1

    def commit(self):
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(self.next.items())]
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            fail(f"{self.name}: commit failed: {e.args[0]}")
        expect(all(tp.error is None for tp in done), f"{self.name}: commit: {[str(tp.error) for tp in done]}")
        return {tp.partition: tp.offset for tp in done}

    def close(self):
        self.consumer.close()
        self.closed = True


def drive(members, deadline, done, progress):
    while not done():
        deadline.check(progress())
        for m in members:
            m.poll(0.05)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--instance", default="static-1")
    ap.add_argument("--static-client-id", default="a-static", help="sorts before 'b-other': S leads the group")
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--rejoin-s", type=float, default=10.0)
    args = ap.parse_args()
    topic, group = args.topic, args.group
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    produce(args.bootstrap, topic, args.n, "before")
    partitions = confluent_partitions(admin, topic, Deadline(20, "metadata"))

    s = Member("S", args.bootstrap, group, topic, args.static_client_id, args.instance)
    o = Member("O", args.bootstrap, group, topic, "b-other")
    s2 = None
    describe = lambda: (f"S {s.assignment()} events {s.events}; O {o.assignment()} events {o.events}"
                        + (f"; S2 {s2.assignment()} events {s2.events} first offsets {s2.first}" if s2 else ""))
    split = lambda: (s.assignment() and o.assignment() and sorted(s.assignment() + o.assignment()) == partitions)
    drive([s, o], Deadline(60, "S and O splitting the partitions"), split, describe)
    share = s.assignment()
    drive([s, o], Deadline(30, "S reading from each of its partitions"), lambda: set(s.next) >= set(share), describe)
    committed = s.commit()
    old_id = s.consumer.memberid()
    d = admin.describe_consumer_groups([group])[group].result(timeout=20)
    leader = "S" if args.static_client_id < "b-other" else "O"
    o_events = len(o.events)

    s.close()
    closed_at = time.monotonic()
    # The group keeps S (no LeaveGroup): O sees nothing while S is away.
    drive([o], Deadline(5, "O"), lambda: time.monotonic() - closed_at > 2.0, describe)
    expect(len(o.events) == o_events, f"O rebalanced after S (static) closed: {o.events[o_events:]}")
    d = admin.describe_consumer_groups([group])[group].result(timeout=20)
    expect(d.state == ConsumerGroupState.STABLE and len(d.members) == 2,
           f"after S (static) closed: group {d.state} with {len(d.members)} members; a static close must not leave")

    s2 = Member("S2", args.bootstrap, group, topic, args.static_client_id, args.instance)
    started = time.monotonic()
    drive([s2, o], Deadline(args.rejoin_s, f"S2 (instance {args.instance}) getting S's partitions {share} back"),
          lambda: s2.assignment(), lambda: f"S2 {s2.assignment()} events {s2.events}; O events {o.events}")
    rejoin_s = time.monotonic() - started
    expect(s2.assignment() == share, f"S2 got partitions {s2.assignment()}, S had {share}")
    new_id = s2.consumer.memberid()
    expect(new_id and new_id != old_id, f"S2's member id {new_id!r}, S's was {old_id!r}: a rejoin gets a new id")
    # More records, so S2 has something to read on every partition, whatever S read.
    produce(args.bootstrap, topic, args.n, "after")
    drive([s2, o], Deadline(60, "S2 reading from each of its partitions"),
          lambda: set(s2.first) >= set(share) and time.monotonic() - started > rejoin_s + 2.0, describe)
    expect(len(o.events) == o_events, f"O rebalanced while S2 replaced S: {o.events[o_events:]}")
    for p in share:
        expect(s2.first[p] == committed[p], f"partition {p}: S2 read first at offset {s2.first[p]}, S committed {committed[p]}")
    d = admin.describe_consumer_groups([group])[group].result(timeout=20)
    members = {m.member_id: m.group_instance_id for m in d.members}
    expect(d.state == ConsumerGroupState.STABLE and len(members) == 2 and members.get(new_id) == args.instance
           and old_id not in members, f"after S2 rejoined: {d.state}, members {members}")
    s2.close()
    o.close()
    print(json.dumps({"leader": leader, "share": share, "rejoin_s": round(rejoin_s, 2), "old_id": old_id,
                      "new_id": new_id, "o_events": o.events, "s2_events": s2.events}))


if __name__ == "__main__":
    main(run)
