#!/usr/bin/env python3
"""ListOffsets by timestamp, earliest and latest, against records with known timestamps.

Writes 13 records with explicit CreateTime timestamps to partition 0 of a fresh topic:
offsets 0-4 in one batch (one flush), 5-9 one batch each, then 10-12 out of timestamp order
(base+20 s, base+15 s, base+25 s). The base is an hour ago, whole seconds, so retention by
time never touches the test data. Then asks offsets_for_times for timestamps chosen to hit
inside a batch, across batches, exactly on a record, between records, before everything,
after everything, and inside the out-of-order tail, where Kafka's rule (the earliest offset
whose timestamp is >= the target) differs from a search over sorted timestamps. Also checks
the watermarks: low 0, high = the log end offset 13, and that each record reads back with
its timestamp.
"""

import argparse
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from common import Deadline, confluent_read_all, expect, fail, main

SECOND = 1000


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    args = ap.parse_args()
    topic = args.topic
    base = (int(time.time()) - 3600) * SECOND
    # offset -> timestamp; the order of this list is the produce order.
    timestamps = [base + i * SECOND for i in range(10)] + [base + 20 * SECOND, base + 15 * SECOND, base + 25 * SECOND]

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 50, "message.timeout.ms": 30000})
    reports = []
    on_delivery = lambda err, msg: reports.append((err, msg))  # noqa: E731

    def send(i):
        producer.produce(topic, key=f"t{i}".encode(), value=f"at-{timestamps[i]}".encode(), partition=0,
                         timestamp=timestamps[i], on_delivery=on_delivery)

    for i in range(5):
        send(i)
    expect(producer.flush(30) == 0, "first batch not delivered within 30 s")
    for i in range(5, 13):
        send(i)
        expect(producer.flush(30) == 0, f"record {i} not delivered within 30 s")
    for err, msg in reports:
        if err is not None:
            fail(f"delivery of {msg.key()!r} failed: {err}")
    offsets = [msg.offset() for _, msg in reports]
    expect(offsets == list(range(13)), f"delivery offsets {offsets}, expected 0..12")

    deadline = Deadline(60, f"{topic}: list offsets")
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "seedlog-list-offsets",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        expect((low, high) == (0, 13), f"watermarks (earliest, latest) = ({low}, {high}), expected (0, 13)")

        # (target timestamp, expected offset, why); -1: no record at or after the target.
        cases = [
            (base - 1, 0, "before every record"),
            (base, 0, "exactly the first record"),
            (base + 2 * SECOND, 2, "exactly a record inside the first batch"),
            (base + 2 * SECOND + 1, 3, "between two records of the first batch"),
            (base + 4 * SECOND + 500, 5, "between the first batch and the next"),
            (base + 7 * SECOND, 7, "exactly a single-record batch"),
            (base + 9 * SECOND + 1, 10, "after the in-order part: first record >= is offset 10 (base+20s)"),
            (base + 15 * SECOND, 10, "base+15s is at offset 11, but offset 10 (base+20s) comes first"),
            (base + 20 * SECOND, 10, "exactly offset 10"),
            (base + 20 * SECOND + 1, 12, "only offset 12 (base+25s) is later"),
            (base + 25 * SECOND, 12, "exactly the last record"),
            (base + 25 * SECOND + 1, -1, "after every record"),
        ]
        mismatches = []
        for target, want, why in cases:
            res = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=max(1.0, deadline.left()))
            got = res[0]
            if got.error is not None:
                mismatches.append(f"target base+{target - base} ms ({why}): error {got.error}")
            elif got.offset != want:
                mismatches.append(f"target base+{target - base} ms ({why}): offset {got.offset}, expected {want}")
        expect(not mismatches, "offsets_for_times:\n  " + "\n  ".join(mismatches))
    finally:
        consumer.close()

    got = confluent_read_all(args.bootstrap, topic, [0], deadline)
    expect(len(got) == 13, f"read {len(got)} records back, produced 13")
    for r in got:
        want = timestamps[r["offset"]]
        expect(r["timestamp"][1] == want, f"offset {r['offset']}: timestamp {r['timestamp']}, produced {want}")
        expect(r["value"] == f"at-{want}".encode(), f"offset {r['offset']}: value {r['value']!r}")


if __name__ == "__main__":
    main(run)
