#!/usr/bin/env python3
"""kafka-python group consumer: read all, commit, close; the next member starts at the commits.

Produces N "old" records. A KafkaConsumer subscribed in group `--group` (no auto-commit,
auto_offset_reset=earliest) must read exactly those records, each at the partition and
offset its send result named, then commit() synchronously; committed() must then be the log
end of every partition, and it closes (leaving the group). M "new" records are produced. A
second consumer of the same group, started afterwards, must find the same committed offsets and
read exactly the M new records and nothing old: auto_offset_reset=earliest would re-read from
offset 0 if the commits were lost.
"""

import argparse
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from common import Deadline, expect, fail, main


def produce(bootstrap, topic, prefix, n):
    """{(partition, offset): (key, value)} of n records."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=15000,
                             max_block_ms=30000, delivery_timeout_ms=45000)
    try:
        futures = []
        for i in range(n):
            key, value = f"{prefix}-key-{i:05d}".encode(), f"{prefix}-value-{i:05d}".encode()
            futures.append((key, value, producer.send(topic, key=key, value=value)))
        producer.flush(timeout=45)
        at = {}
        for key, value, fut in futures:
            try:
                md = fut.get(timeout=5)
            except KafkaError as e:
                fail(f"{topic}: send of {key!r} failed: {e!r}")
            at[(md.partition, md.offset)] = (key, value)
        return at
    finally:
        producer.close(timeout=10)


def group_consumer(bootstrap, topic, group, name):
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=f"kafka-python-group-{name}",
                         enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                         heartbeat_interval_ms=500, request_timeout_ms=15000)


def read(consumer, want, what, deadline):
    """Polls until every (partition, offset) of `want` was read, then half a second more; each
    record read must be one of `want`, read once, with its key and value."""
    got = {}
    while len(got) < len(want):
        deadline.check(f"{what}: read {len(got)} of {len(want)} records; assignment {sorted(consumer.assignment())}")
        for tp, msgs in consumer.poll(timeout_ms=200).items():
            for m in msgs:
                where = (tp.partition, m.offset)
                expect(where in want, f"{what}: read partition {where[0]} offset {where[1]} ({m.key!r}), "
                                      f"which is not one of the {len(want)} records expected")
                expect(where not in got, f"{what}: read partition {where[0]} offset {where[1]} twice")
                expect((m.key, m.value) == want[where],
                       f"{what}: partition {where[0]} offset {where[1]}: read {(m.key, m.value)}, produced {want[where]}")
                got[where] = True
    extra = [(tp.partition, m.offset) for tp, msgs in consumer.poll(timeout_ms=500).items() for m in msgs]
    expect(not extra, f"{what}: read more than the {len(want)} records expected: {extra[:5]}")


def committed(consumer, topic, partitions):
    return {p: consumer.committed(TopicPartition(topic, p), timeout_ms=10000) for p in partitions}


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--m", type=int, default=200)
    args = ap.parse_args()
    topic = args.topic

    old = produce(args.bootstrap, topic, "old", args.n)
    partitions = sorted({p for (p, _) in old})
    ends = {p: max(o for (q, o) in old if q == p) + 1 for p in partitions}

    first = group_consumer(args.bootstrap, topic, args.group, "first")
    try:
        read(first, old, "first consumer", Deadline(60, "first consumer reading the old records"))
        try:
            first.commit()
        except KafkaError as e:
            fail(f"first consumer: commit() failed: {e!r}")
        got = committed(first, topic, partitions)
        expect(got == ends, f"first consumer: committed {got} after commit(), log ends {ends}")
    finally:
        first.close(autocommit=False)

    new = produce(args.bootstrap, topic, "new", args.m)
    expect(all(o >= ends[p] for (p, o) in new), "new records landed below the old log ends")

    started = time.monotonic()
    second = group_consumer(args.bootstrap, topic, args.group, "second")
    try:
        got = committed(second, topic, partitions)
        expect(got == ends, f"second consumer: committed {got} before reading, the first committed {ends}")
        read(second, new, "second consumer", Deadline(60, "second consumer reading the new records"))
        second.commit()
    finally:
        second.close(autocommit=False)
    print(f"partitions {partitions}, old log ends {ends}; second consumer read {len(new)} new records "
          f"in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main(run)
