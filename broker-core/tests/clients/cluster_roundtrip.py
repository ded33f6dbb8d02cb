#!/usr/bin/env python3
"""A replicated topic end to end: idempotent acks=all produce of N records, read back exactly once.

Expects --topic to exist already (created by `cluster_topic.py --create`). Produces N keyed
records with confluent-kafka (acks=all, enable.idempotence), requires every delivery report to
succeed with offsets increasing in send order within each partition, then reads every
partition from the beginning (assign(), no group) and requires each record exactly once, at
the offset its delivery report gave, with its key and value, in send order per partition.
"""

import argparse
import sys

from confluent_kafka import Producer

from common import (Deadline, check_dense, confluent_partitions, confluent_read_all, expect, fail,
                    group_by_partition, main)
from confluent_kafka.admin import AdminClient


def record(i):
    return f"rc-{i:06d}".encode(), (f"replicated-{i:06d}|" + "r" * (i % 61)).encode()


def index_of(key):
    return int(key.decode().split("-")[1])


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    topic, n = args.topic, args.n

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 30000})
    reports = []
    for i in range(n):
        key, value = record(i)
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=lambda err, msg: reports.append((err, msg)))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(45)
    expect(left == 0, f"{topic}: {left} of {n} records neither delivered nor failed after flush(45 s)")
    expect(len(reports) == n, f"{topic}: {len(reports)} delivery reports for {n} records")

    delivered, last = [], {}
    for err, msg in reports:
        if err is not None:
            fail(f"{topic}: delivery of {msg.key()!r} failed: {err}")
        i, p, offset = index_of(msg.key()), msg.partition(), msg.offset()
        if p in last and offset <= last[p][1]:
            fail(f"{topic}: partition {p}: record {i} got offset {offset}, earlier record {last[p][0]} got {last[p][1]}")
        last[p] = (i, offset)
        delivered.append({"i": i, "partition": p, "offset": offset})
    want = group_by_partition(delivered)
    check_dense(want, f"{topic} delivery reports")
    print(f"{n} records acknowledged, per partition {{{', '.join(f'{p}: {len(rs)}' for p, rs in sorted(want.items()))}}}",
          file=sys.stderr)

    deadline = Deadline(60, f"{topic}: read back")
    partitions = confluent_partitions(AdminClient({"bootstrap.servers": args.bootstrap}), topic, deadline)
    have = group_by_partition(confluent_read_all(args.bootstrap, topic, partitions, deadline))
    seen = {}
    for p, rs in sorted(have.items()):
        for r in rs:
            i = index_of(r["key"])
            if i in seen:
                fail(f"{topic}: record {i} read twice: partition {seen[i][0]} offset {seen[i][1]} and "
                     f"partition {p} offset {r['offset']}")
            seen[i] = (p, r["offset"])
    missing = [i for i in range(n) if i not in seen]
    expect(not missing, f"{topic}: {len(missing)} of {n} acknowledged records not read back (first: {missing[:5]})")
    expect(len(seen) == n, f"{topic}: read {len(seen)} distinct records, produced {n}")
    for p in sorted(want):
        rs = have.get(p, [])
        expect(len(rs) == len(want[p]), f"{topic}: partition {p}: read {len(rs)} records, {len(want[p])} acknowledged")
        for w, h in zip(want[p], rs):
            where = f"{topic}: partition {p} offset {w['offset']}"
            key, value = record(w["i"])
            expect(h["offset"] == w["offset"], f"{where}: read offset {h['offset']} in its place (out of order)")
            expect(h["key"] == key, f"{where}: key {h['key']!r}, acknowledged {key!r} (order or content differs)")
            expect(h["value"] == value, f"{where}: value {h['value'][:40]!r}..., produced {value[:40]!r}...")
    print(f"{n} records read back exactly once, in order per partition", file=sys.stderr)


if __name__ == "__main__":
    main(run)
