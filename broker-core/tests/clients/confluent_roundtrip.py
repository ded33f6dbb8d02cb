#!/usr/bin/env python3
"""confluent-kafka (librdkafka) round trip: idempotent acks=all produce, then read everything back.

Five passes, each on its own topic so offsets start at 0: uncompressed (`TOPIC`), gzip
(`TOPIC-gzip`), snappy (`TOPIC-snappy`), lz4 (`TOPIC-lz4`) and zstd (`TOPIC-zstd`). Each pass produces N keyed records with a header,
checks that every delivery report succeeded with offsets dense from 0 in each partition and
increasing in send order (idempotence keeps order), then reads every partition from the
beginning with assign() and compares key, value, header and timestamp record by record.
"""

import argparse

from confluent_kafka import Producer

from common import Deadline, check_dense, check_records_match, confluent_partitions, confluent_read_all, expect, fail, group_by_partition, main


def record(i):
    """The i-th record: unique key and value, a value long enough for compression to matter."""
    key = f"key-{i:06d}".encode()
    value = (f"value-{i:06d}|" + "seedlog " * (i % 16 + 4)).encode()
    return key, value, [("idx", str(i).encode())]


def produce(bootstrap, topic, n, compression):
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "compression.type": compression,
        "linger.ms": 5,
        "message.timeout.ms": 30000,
    })
    reports = []

    def on_delivery(err, msg):
        reports.append((err, msg))

    for i in range(n):
        key, value, headers = record(i)
        while True:
            try:
                producer.produce(topic, value=value, key=key, headers=headers, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)  # local queue full: let deliveries drain
    left = producer.flush(45)
    expect(left == 0, f"{topic}: {left} of {n} records still undelivered after flush(45 s)")
    expect(len(reports) == n, f"{topic}: {len(reports)} delivery reports for {n} records")

    delivered, last_offset = [], {}
    for err, msg in reports:
        if err is not None:
            fail(f"{topic}: delivery of key {msg.key()!r} failed: {err}")
        i = int(msg.key().decode().split("-")[1])
        p, offset = msg.partition(), msg.offset()
        # Idempotent producer: within a partition, send order is offset order.
        if p in last_offset and offset <= last_offset[p][1]:
            fail(f"{topic}: partition {p}: record {i} got offset {offset} but earlier record "
                 f"{last_offset[p][0]} got {last_offset[p][1]}")
        last_offset[p] = (i, offset)
        delivered.append({"i": i, "partition": p, "offset": offset, "timestamp": msg.timestamp()})
    expect(sorted(d["i"] for d in delivered) == list(range(n)),
           f"{topic}: delivery reports do not cover records 0..{n} exactly once")
    return delivered


def check_read_back(bootstrap, topic, n, delivered, expect_partitions):
    deadline = Deadline(60, f"{topic}: read back")
    partitions = confluent_partitions_for(bootstrap, topic, deadline)
    if expect_partitions is not None:
        expect(len(partitions) == expect_partitions,
               f"{topic}: metadata lists partitions {partitions}, expected {expect_partitions}")
        used = {d["partition"] for d in delivered}
        expect(used == set(partitions),
               f"{topic}: {n} distinct keys landed only in partitions {sorted(used)} of {partitions}")
    got = confluent_read_all(bootstrap, topic, partitions, deadline)
    expect(len(got) == n, f"{topic}: read {len(got)} records back, produced {n}")
    want = group_by_partition(delivered)
    check_records_match(topic, want, group_by_partition(got), record, "the delivery report")


def confluent_partitions_for(bootstrap, topic, deadline):
    from confluent_kafka.admin import AdminClient

    return confluent_partitions(AdminClient({"bootstrap.servers": bootstrap}), topic, deadline)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--expect-partitions", type=int, default=None,
                    help="the auto-created topic must have this many partitions, all of them used")
    args = ap.parse_args()
    for suffix, compression in (("", "none"), ("-gzip", "gzip"), ("-snappy", "snappy"), ("-lz4", "lz4"), ("-zstd", "zstd")):
        topic = args.topic + suffix
        delivered = produce(args.bootstrap, topic, args.n, compression)
        check_dense(group_by_partition(delivered), f"{topic} ({compression}) delivery reports")
        check_read_back(args.bootstrap, topic, args.n, delivered, args.expect_partitions)


if __name__ == "__main__":
    main(run)
