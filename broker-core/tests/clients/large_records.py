#!/usr/bin/env python3
"""confluent-kafka (librdkafka) reading large records back byte for byte (zero-copy fetch).

Produces N records of SIZE random bytes (each record's bytes drawn from a generator seeded with
its index, so the check needs no copy kept), acks=all, no compression, to one partition; then
reads the partition from the beginning with assign() and compares every value and offset. The
broker sends these records from its segment files with sendfile: any byte out of place (a
frame length off by one, a region from the wrong position) shows up here as a mismatch or a
client parse error.
"""

import argparse
import random

from confluent_kafka import Producer

from common import Deadline, confluent_read_all, expect, fail, main


def value(i, size):
    return random.Random(i).randbytes(size)


def run():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    a = ap.parse_args()
    producer = Producer({
        "bootstrap.servers": a.bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "message.max.bytes": a.size + 4096,
        "message.timeout.ms": 60000,
    })
    errors = []
    for i in range(a.n):
        while True:
            try:
                producer.produce(a.topic, value=value(i, a.size), key=str(i).encode(), partition=0,
                                 on_delivery=lambda err, msg: err and errors.append(err))
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(90)
    expect(left == 0 and not errors, f"{left} records undelivered, errors {errors[:3]}")
    records = confluent_read_all(a.bootstrap, a.topic, [0], Deadline(120, f"reading {a.topic}"))
    expect(len(records) == a.n, f"read {len(records)} records, produced {a.n}")
    for i, r in enumerate(records):
        if r["offset"] != i or r["key"] != str(i).encode():
            fail(f"record {i}: offset {r['offset']} key {r['key']!r}")
        if r["value"] != value(i, a.size):
            got = r["value"] or b""
            at = next((j for j, (x, y) in enumerate(zip(got, value(i, a.size))) if x != y), min(len(got), a.size))
            fail(f"record {i}: value differs at byte {at} (length {len(got)}, produced {a.size})")


if __name__ == "__main__":
    main(run)
