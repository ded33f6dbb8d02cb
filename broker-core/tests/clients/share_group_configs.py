#!/usr/bin/env python3
"""A share group's own configs decide (confluent-kafka ShareConsumer, group configs set with
IncrementalAlterConfigs).

share.record.lock.duration.ms=2000 on group G1 (the broker's group.share.record.lock.duration.ms
stays 30000): a first member (a child process) acquires the N records of a 1-partition topic and
is then frozen (SIGSTOP: its connections stay open, it neither acknowledges nor heartbeats). A
second member must be handed the same N records at delivery count 2 within LOCK_WAIT_MAX_S of
the first member having them: their locks ran out at the group's 2 s, not the broker's 30 s.

share.auto.offset.reset=by_duration:PT1H on group G2: of OLD records produced with a timestamp
two hours back and then N records produced now, a member of G2 must be handed exactly the N new
ones (the first offset whose timestamp is within the last hour), never an old one.

share.isolation.level=read_committed on group G3: a transactional producer commits a
transaction, aborts one and commits another; a member of G3 must be handed exactly the committed
records (no aborted one, no marker), and a member of a read_uncommitted group G4 the aborted
ones too.

Prints one summary line on stdout.
"""

import os
import signal
import time

from confluent_kafka import AcknowledgeType, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from common import Deadline, confluent_partitions, expect, fail, main, share_args
from share_group import commit, share_consumer

# The group's lock, and how long after the first member got the records the second may wait for
# them: well under the broker's 30 s default, well over 2 s plus a join and a few polls.
LOCK_MS = 2000
LOCK_WAIT_MAX_S = 15.0
OLD = 20
OLD_AGE_MS = 2 * 3600 * 1000


def set_group_config(admin, group, name, value):
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    try:
        admin.incremental_alter_configs([resource])[resource].result(timeout=20)
    except KafkaException as e:
        fail(f"incremental_alter_configs(GROUP {group!r}, {name}={value}) failed: {e.args[0]}")


def create(admin, topic, deadline):
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=20)
    except KafkaException as e:
        fail(f"create_topics({topic!r}) failed: {e.args[0]}")
    expect(confluent_partitions(admin, topic, deadline) == [0], f"{topic}: not one partition")


def produce(bootstrap, topic, values, timestamp_ms=None):
    """Produces `values` to partition 0 (with `timestamp_ms` as their CreateTime when given);
    returns their offsets by value."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    placed, failed = {}, []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            placed[msg.value().decode()] = msg.offset()

    for v in values:
        if timestamp_ms is None:
            producer.produce(topic, v.encode(), partition=0, on_delivery=on_delivery)
        else:
            producer.produce(topic, v.encode(), partition=0, timestamp=timestamp_ms, on_delivery=on_delivery)
    expect(producer.flush(20) == 0 and not failed, f"produce to {topic!r}: {failed[:3]}")
    return placed


def take(consumer, want, deadline, what, accept):
    """Polls until every offset of `want` was handed out (each ACCEPTed if `accept`); returns
    {offset: delivery count}."""
    seen = {}
    while not want <= set(seen):
        deadline.check(f"{what}: {len(seen)} of {len(want)} records handed out")
        for m in consumer.poll(0.5):
            expect(m.error() is None, f"{what}: poll error {m.error()}")
            expect(m.offset() in want, f"{what}: handed offset {m.offset()} ({m.value()!r}), not one of those expected")
            seen[m.offset()] = m.delivery_count()
            if accept:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    return seen


def lock_duration(args):
    deadline = Deadline(60, "share.record.lock.duration.ms")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topic, group = f"{args.topic}-lock", f"{args.group}-lock"
    create(admin, topic, deadline)
    set_group_config(admin, group, "share.auto.offset.reset", "earliest")
    set_group_config(admin, group, "share.record.lock.duration.ms", str(LOCK_MS))
    placed = produce(args.bootstrap, topic, [f"r{i}" for i in range(args.n)])
    want = set(placed.values())

    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        # The first member: acquires everything, says so, and freezes holding it.
        os.close(ready_r)
        consumer = share_consumer(args.bootstrap, group, "share-holder", args.debug, poll_records=args.n)
        consumer.subscribe([topic])
        try:
            take(consumer, want, deadline, "first member", accept=False)
        except Exception as e:  # noqa: BLE001 - the parent reports it
            os.write(ready_w, f"fail {e}".encode())
            os._exit(1)
        os.write(ready_w, b"held")
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    os.close(ready_w)
    try:
        said = os.read(ready_r, 4096).decode()
        expect(said == "held", f"first member: {said or 'exited without acquiring the records'}")
        held_at = time.monotonic()
        consumer = share_consumer(args.bootstrap, group, "share-taker", args.debug, poll_records=args.n)
        try:
            consumer.subscribe([topic])
            seen = take(consumer, want, deadline, "second member", accept=True)
            waited = time.monotonic() - held_at
            counts = sorted(set(seen.values()))
            expect(counts == [2], f"second member: delivery counts {counts}, expected 2 (each record's second delivery)")
            expect(waited <= LOCK_WAIT_MAX_S, f"second member: handed the records {waited:.1f} s after the first member took "
                                              f"them; the group's lock is {LOCK_MS} ms")
            commit(consumer, "second member")
        finally:
            consumer.close()
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    return f"a held record came back after the group's {LOCK_MS} ms lock ({waited:.1f} s, delivery count 2)"


def by_duration(args):
    deadline = Deadline(60, "share.auto.offset.reset=by_duration")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topic, group = f"{args.topic}-since", f"{args.group}-since"
    create(admin, topic, deadline)
    old = produce(args.bootstrap, topic, [f"old{i}" for i in range(OLD)], int(time.time() * 1000) - OLD_AGE_MS)
    new = produce(args.bootstrap, topic, [f"new{i}" for i in range(args.n)])
    expect(max(old.values()) < min(new.values()), f"{topic}: old records {sorted(old.values())} not before the new")
    set_group_config(admin, group, "share.auto.offset.reset", "by_duration:PT1H")
    consumer = share_consumer(args.bootstrap, group, "share-since", args.debug, poll_records=args.n)
    try:
        consumer.subscribe([topic])
        seen = take(consumer, set(new.values()), deadline, "by_duration member", accept=True)
        commit(consumer, "by_duration member")
    finally:
        consumer.close()
    expect(sorted(seen) == sorted(new.values()), f"by_duration member: handed offsets {sorted(seen)}")
    return f"by_duration:PT1H started at offset {min(new.values())}, past {OLD} records two hours old"


def read_committed(args):
    deadline = Deadline(60, "share.isolation.level=read_committed")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topic = f"{args.topic}-txn"
    create(admin, topic, deadline)
    producer = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": f"{topic}-producer", "acks": "all", "linger.ms": 5})
    placed = {}

    def on_delivery(err, msg):
        expect(err is None, f"transactional produce to {topic!r}: {err}")
        placed[msg.value().decode()] = msg.offset()

    try:
        producer.init_transactions(20)
        for name, commit_it in [("c1", True), ("a", False), ("c2", True)]:
            producer.begin_transaction()
            for i in range(args.n):
                producer.produce(topic, f"{name}-{i}".encode(), partition=0, on_delivery=on_delivery)
            expect(producer.flush(20) == 0, f"{topic}: transaction {name} not flushed")
            if commit_it:
                producer.commit_transaction(20)
            else:
                producer.abort_transaction(20)
    except KafkaException as e:
        fail(f"transactional producer on {topic!r}: {e.args[0]}")
    committed_offsets = {o for v, o in placed.items() if not v.startswith("a-")}
    aborted_offsets = {o for v, o in placed.items() if v.startswith("a-")}
    expect(len(committed_offsets) == 2 * args.n and len(aborted_offsets) == args.n, f"{topic}: produced {sorted(placed.items())[:5]}")

    seen = {}
    for level, want in [("read_committed", committed_offsets), ("read_uncommitted", committed_offsets | aborted_offsets)]:
        group = f"{args.group}-{level}"
        set_group_config(admin, group, "share.auto.offset.reset", "earliest")
        set_group_config(admin, group, "share.isolation.level", level)
        consumer = share_consumer(args.bootstrap, group, f"share-{level}", args.debug, poll_records=3 * args.n)
        try:
            consumer.subscribe([topic])
            seen[level] = take(consumer, want, deadline, f"{level} member", accept=True)
            commit(consumer, f"{level} member")
        finally:
            consumer.close()
    return (f"read_committed was handed the {len(committed_offsets)} committed records and none of the {len(aborted_offsets)} "
            f"aborted (read_uncommitted {len(seen['read_uncommitted'])})")


def run():
    args = share_args(__doc__, 50)
    print(f"{lock_duration(args)}; {by_duration(args)}; {read_committed(args)}")


if __name__ == "__main__":
    main(run)
