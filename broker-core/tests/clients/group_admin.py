#!/usr/bin/env python3
"""AdminClient on consumer groups: list, describe, list and alter offsets, delete.

Produces N records over the topic's partitions; two confluent-kafka consumers of group
`--group` (range) split the partitions, read everything and commit synchronously, with
metadata. While they are members: list_consumer_groups() lists the group as STABLE and CLASSIC
(also under STABLE and CLASSIC filters, not under EMPTY or CONSUMER); describe_consumer_groups()
shows STABLE, the range assignor, the coordinator, both members with their client ids and the
very assignments the consumers hold; list_consumer_group_offsets() returns each partition's
committed offset and metadata (all partitions, and a chosen subset); alter_consumer_group_offsets()
fails with UNKNOWN_MEMBER_ID and delete_consumer_groups() with NON_EMPTY_GROUP. Once both
closed: the group is EMPTY with no members and its offsets unchanged; altering an offset
succeeds and shows; delete_consumer_groups() succeeds; the group is no longer listed,
describing it says DEAD, list_consumer_group_offsets() returns no offsets, and deleting again
fails with GROUP_ID_NOT_FOUND.
"""

import argparse
import time

from confluent_kafka import (ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType, KafkaError, KafkaException,
                             Producer, TopicPartition)
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, expect, fail, main

call_timeout_s = 20


def produce(bootstrap, topic, n):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": 30000})
    errors = []
    for i in range(n):
        producer.produce(topic, key=f"ga-{i}".encode(), value=f"ga-value-{i}".encode(),
                         on_delivery=lambda err, msg: err and errors.append(err))
    expect(producer.flush(45) == 0 and not errors, f"{topic}: produce failed: {errors[:3]}")


def result(future, what):
    try:
        return future.result(timeout=call_timeout_s)
    except KafkaException as e:
        fail(f"{what} failed: {e.args[0]}")


def error_of(future, what):
    """The KafkaError `future` failed with; fails the script if it succeeded."""
    try:
        value = future.result(timeout=call_timeout_s)
    except KafkaException as e:
        return e.args[0]
    fail(f"{what}: succeeded ({value}), expected an error")


def listed(admin, group, **kwargs):
    """The group's listing from list_consumer_groups(**kwargs), or None."""
    r = result(admin.list_consumer_groups(request_timeout=call_timeout_s, **kwargs), "list_consumer_groups")
    expect(not r.errors, f"list_consumer_groups({kwargs}) errors: {r.errors}")
    found = [g for g in r.valid if g.group_id == group]
    expect(len(found) <= 1, f"list_consumer_groups lists {group!r} {len(found)} times")
    return found[0] if found else None


def describe(admin, group):
    return result(admin.describe_consumer_groups([group], request_timeout=call_timeout_s)[group], f"describe_consumer_groups({group!r})")


def offsets(admin, group, partitions=None):
    """{(topic, partition): offset} from list_consumer_group_offsets."""
    request = ConsumerGroupTopicPartitions(group, partitions)
    r = result(admin.list_consumer_group_offsets([request], request_timeout=call_timeout_s)[group],
               f"list_consumer_group_offsets({group!r})")
    expect(r.group_id == group, f"list_consumer_group_offsets answered for {r.group_id!r}, asked {group!r}")
    for tp in r.topic_partitions:
        expect(tp.error is None, f"list_consumer_group_offsets({group!r}): {tp.topic}-{tp.partition}: {tp.error}")
    return {(tp.topic, tp.partition): tp.offset for tp in r.topic_partitions}


def metadata(admin, group):
    """{(topic, partition): metadata} from list_consumer_group_offsets."""
    r = result(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=call_timeout_s)[group],
               f"list_consumer_group_offsets({group!r})")
    return {(tp.topic, tp.partition): tp.metadata for tp in r.topic_partitions}


def alter(admin, group, topic, partition, offset):
    """alter_consumer_group_offsets of one partition: None, or the error it failed with."""
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition, offset)])
    try:
        r = admin.alter_consumer_group_offsets([request], request_timeout=call_timeout_s)[group].result(timeout=call_timeout_s)
    except KafkaException as e:
        return e.args[0]
    errors = [tp.error for tp in r.topic_partitions if tp.error is not None]
    return errors[0] if errors else None


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--n", type=int, default=600)
    args = ap.parse_args()
    topic, group = args.topic, args.group
    admin = AdminClient({"bootstrap.servers": args.bootstrap})

    produce(args.bootstrap, topic, args.n)
    partitions = confluent_partitions(admin, topic, Deadline(20, "metadata"))
    expect(len(partitions) >= 2, f"{topic}: {len(partitions)} partitions; two consumers need at least 2")
    expect(listed(admin, group) is None, f"{group!r} listed before any consumer joined it")

    from confluent_kafka import Consumer
    consumers = {}
    for name in ("one", "two"):
        c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group, "client.id": f"group-admin-{name}",
                      "partition.assignment.strategy": "range", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
        c.subscribe([topic])
        consumers[name] = c
    assigned = lambda c: sorted(tp.partition for tp in c.assignment())
    read, next_offset = 0, {name: {} for name in consumers}
    deadline = Deadline(60, f"two consumers of {group!r} splitting {topic!r} and reading all {args.n} records")
    while True:
        a = {name: assigned(c) for name, c in consumers.items()}
        if read >= args.n and all(a.values()) and sorted(a["one"] + a["two"]) == partitions:
            break
        deadline.check(f"assignments {a}, read {read}")
        for name, c in consumers.items():
            msg = c.poll(0.05)
            if msg is None:
                continue
            expect(msg.error() is None, f"consumer {name}: {msg.error()}")
            next_offset[name][msg.partition()] = msg.offset() + 1
            read += 1
    expect(read == args.n, f"the consumers read {read} records, {args.n} were produced")
    commits = {}
    for name, c in consumers.items():
        tps = [TopicPartition(topic, p, o, metadata=f"from-{name}") for p, o in sorted(next_offset[name].items())]
        for tp in c.commit(offsets=tps, asynchronous=False):
            expect(tp.error is None, f"consumer {name}: commit of partition {tp.partition}: {tp.error}")
            commits[(topic, tp.partition)] = tp.offset
    expect(sorted(p for (_, p) in commits) == partitions, f"commits {commits} do not cover partitions {partitions}")
    assignment = {f"group-admin-{name}": assigned(c) for name, c in consumers.items()}
    owner = {p: name for name, c in consumers.items() for p in assigned(c)}

    # While both are members.
    g = listed(admin, group)
    expect(g is not None, f"list_consumer_groups does not list {group!r} while two consumers are in it")
    expect(g.state == ConsumerGroupState.STABLE, f"{group!r} listed as {g.state}, expected STABLE")
    expect(not g.is_simple_consumer_group, f"{group!r} listed as a simple consumer group")
    expect(g.type == ConsumerGroupType.CLASSIC, f"{group!r} listed with type {g.type}, expected CLASSIC")
    expect(listed(admin, group, types={ConsumerGroupType.CLASSIC}) is not None, f"{group!r} not listed under a CLASSIC filter")
    expect(listed(admin, group, types={ConsumerGroupType.CONSUMER}) is None, f"{group!r} listed under a CONSUMER filter")
    expect(listed(admin, group, states={ConsumerGroupState.STABLE}) is not None, f"{group!r} not listed under a STABLE filter")
    expect(listed(admin, group, states={ConsumerGroupState.EMPTY}) is None, f"{group!r} listed under an EMPTY filter")

    d = describe(admin, group)
    expect(d.state == ConsumerGroupState.STABLE, f"describe {group!r}: state {d.state}, expected STABLE")
    expect(d.partition_assignor == "range", f"describe {group!r}: assignor {d.partition_assignor!r}, expected 'range'")
    expect(not d.is_simple_consumer_group, f"describe {group!r}: a simple consumer group")
    expect(d.coordinator is not None and f"{d.coordinator.host}:{d.coordinator.port}" == args.bootstrap,
           f"describe {group!r}: coordinator {d.coordinator}, expected the broker at {args.bootstrap}")
    described = {}
    for m in d.members:
        expect(m.member_id, f"describe {group!r}: a member without an id: {m}")
        tps = m.assignment.topic_partitions if m.assignment is not None else []
        expect(all(tp.topic == topic for tp in tps), f"describe {group!r}: member {m.client_id} assigned {tps}")
        described[m.client_id] = sorted(tp.partition for tp in tps)
    expect(described == assignment, f"describe {group!r}: members' assignments {described}, the consumers hold {assignment}")

    expect(offsets(admin, group) == commits, f"list_consumer_group_offsets({group!r}): {offsets(admin, group)}, committed {commits}")
    some = [TopicPartition(topic, p) for p in partitions[:2]]
    want = {(topic, p): commits[(topic, p)] for p in partitions[:2]}
    expect(offsets(admin, group, some) == want, f"list_consumer_group_offsets({group!r}, {partitions[:2]}): "
                                               f"{offsets(admin, group, some)}, committed {want}")

    want = {(topic, p): f"from-{owner[p]}" for p in partitions}
    expect(metadata(admin, group) == want, f"list_consumer_group_offsets({group!r}): metadata {metadata(admin, group)}, committed {want}")
    # An admin commit (generation -1, no member id) is refused while the group has members.
    err = alter(admin, group, topic, partitions[0], 1)
    expect(err is not None and err.code() == KafkaError.UNKNOWN_MEMBER_ID,
           f"alter_consumer_group_offsets({group!r}) with two members: {err}, expected UNKNOWN_MEMBER_ID")

    err = error_of(admin.delete_consumer_groups([group], request_timeout=call_timeout_s)[group],
                   f"delete_consumer_groups({group!r}) with two members")
    expect(err.code() == KafkaError.NON_EMPTY_GROUP,
           f"delete_consumer_groups({group!r}) with two members: {err.name()}, expected NON_EMPTY_GROUP")

    # Once both closed.
    for c in consumers.values():
        c.close()
    deadline = Deadline(20, f"{group!r} listed as EMPTY after both consumers closed")
    while (g := listed(admin, group)) is None or g.state != ConsumerGroupState.EMPTY:
        deadline.check(f"listed as {g.state if g else None}")
        time.sleep(0.2)
    d = describe(admin, group)
    expect(d.state == ConsumerGroupState.EMPTY and not d.members,
           f"describe {group!r} after both closed: {d.state}, members {d.members}")
    expect(offsets(admin, group) == commits, f"offsets of {group!r} changed when its consumers left: {offsets(admin, group)}")
    err = alter(admin, group, topic, partitions[0], 1)
    expect(err is None, f"alter_consumer_group_offsets({group!r}) once EMPTY: {err}")
    commits[(topic, partitions[0])] = 1
    expect(offsets(admin, group) == commits, f"offsets of {group!r} after altering partition {partitions[0]} to 1: {offsets(admin, group)}")

    result(admin.delete_consumer_groups([group], request_timeout=call_timeout_s)[group], f"delete_consumer_groups({group!r}) once empty")
    expect(listed(admin, group) is None, f"{group!r} still listed after deletion")
    d = describe(admin, group)
    expect(d.state == ConsumerGroupState.DEAD and not d.members, f"describe {group!r} after deletion: {d.state}, members {d.members}")
    left = {tp: o for tp, o in offsets(admin, group).items() if o >= 0}
    expect(not left, f"list_consumer_group_offsets({group!r}) after deletion: {left}")
    err = error_of(admin.delete_consumer_groups([group], request_timeout=call_timeout_s)[group],
                   f"delete_consumer_groups({group!r}) a second time")
    expect(err.code() == KafkaError.GROUP_ID_NOT_FOUND,
           f"delete_consumer_groups({group!r}) a second time: {err.name()}, expected GROUP_ID_NOT_FOUND")
    print(f"{group!r}: assignments {assignment}, committed {len(commits)} partitions; listed, described, "
          f"refused deletion while STABLE, deleted once EMPTY")


if __name__ == "__main__":
    main(run)
