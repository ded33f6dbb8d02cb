#!/usr/bin/env python3
"""kafka-python (pure-Python client, its own protocol code) round trip.

KafkaProducer with its 3.x defaults (idempotent, acks=all: said explicitly too) sends N keyed
records with a header; every future must resolve, with offsets dense from 0 per partition and
increasing in send order. Then a group-less KafkaConsumer (group_id=None, no auto-commit)
assign()s every partition, seeks to the beginning, and must read exactly those records back:
same offsets, keys, values, headers and timestamps, in order.
"""

import argparse
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from common import Deadline, check_dense, check_records_match, expect, fail, group_by_partition, main


def record(i):
    return f"kp-key-{i:06d}".encode(), f"kp-value-{i:06d}|{'x' * (i % 50)}".encode(), [("idx", str(i).encode())]


def produce(bootstrap, topic, n):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=15000,
                             max_block_ms=30000, delivery_timeout_ms=45000)
    try:
        futures = []
        for i in range(n):
            key, value, headers = record(i)
            futures.append((i, producer.send(topic, key=key, value=value, headers=headers)))
        producer.flush(timeout=45)
        delivered, last = [], {}
        for i, fut in futures:
            try:
                md = fut.get(timeout=5)
            except KafkaError as e:
                fail(f"{topic}: send of record {i} failed: {e!r}")
            if md.partition in last and md.offset <= last[md.partition][1]:
                fail(f"{topic}: partition {md.partition}: record {i} got offset {md.offset} but earlier "
                     f"record {last[md.partition][0]} got {last[md.partition][1]}")
            last[md.partition] = (i, md.offset)
            delivered.append({"i": i, "partition": md.partition, "offset": md.offset, "timestamp": md.timestamp})
        return delivered
    finally:
        producer.close(timeout=10)


def read_back(bootstrap, topic, n):
    deadline = Deadline(60, f"{topic}: read back")
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=15000)
    try:
        partitions = None
        while not partitions:
            deadline.check(f"no partitions for {topic!r} in metadata")
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                time.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got = []
        while len(got) < n:
            deadline.check(f"read {len(got)} of {n} records from partitions {sorted(partitions)}")
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                for m in msgs:
                    got.append({"partition": tp.partition, "offset": m.offset, "key": m.key, "value": m.value,
                                "headers": list(m.headers or []), "timestamp": m.timestamp})
        # Anything past N would be a duplicate or a stray: give it a moment to show up.
        extra = [m for msgs in consumer.poll(timeout_ms=500).values() for m in msgs]
        expect(not extra and len(got) == n,
               f"{topic}: read {len(got) + len(extra)} records, produced {n} (first extra: "
               f"{(got[n:] or extra or [None])[0]})")
        return got
    finally:
        consumer.close()


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()

    delivered = produce(args.bootstrap, args.topic, args.n)
    expect(sorted(d["i"] for d in delivered) == list(range(args.n)), "futures do not cover every record once")
    want = group_by_partition(delivered)
    check_dense(want, f"{args.topic} produce results")

    check_records_match(args.topic, want, group_by_partition(read_back(args.bootstrap, args.topic, args.n)), record, "the send result")


if __name__ == "__main__":
    main(run)
