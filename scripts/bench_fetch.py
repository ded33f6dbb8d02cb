#!/usr/bin/env python3
"""Client side of scripts/bench-fetch.sh: fill a topic with records of one size, read it back.

  bench_fetch.py produce --bootstrap B --topic T --size S --total-mb M
  bench_fetch.py consume --bootstrap B --topic T --expect-bytes N   # prints seconds and bytes
"""

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition, OFFSET_BEGINNING


def produce(a):
    n = a.total_mb * 1024 * 1024 // a.size
    p = Producer({"bootstrap.servers": a.bootstrap, "acks": "1", "linger.ms": 5,
                  "batch.size": max(1_000_000, a.size + 4096), "message.max.bytes": a.size + 4096,
                  "queue.buffering.max.kbytes": 262144, "message.timeout.ms": 120000})
    value = bytes((i * 31) % 251 for i in range(a.size))
    errors = []
    for _ in range(n):
        while True:
            try:
                p.produce(a.topic, value=value, partition=0, on_delivery=lambda e, m: e and errors.append(e))
                break
            except BufferError:
                p.poll(0.05)
    left = p.flush(600)
    if left or errors:
        sys.exit(f"produce: {left} undelivered, errors {errors[:3]}")
    print(n)


def consume(a):
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "bench-fetch", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.message.max.bytes": a.partition_bytes,
                  "fetch.max.bytes": max(52428800, a.partition_bytes)})
    c.assign([TopicPartition(a.topic, 0, OFFSET_BEGINNING)])
    got, start, deadline = 0, time.monotonic(), time.monotonic() + a.timeout
    while got < a.expect_bytes:
        if time.monotonic() > deadline:
            sys.exit(f"consume: {got} of {a.expect_bytes} bytes after {a.timeout} s")
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                got += len(m.value())
            elif m.error().code() != KafkaError._PARTITION_EOF:
                sys.exit(f"consume: {m.error()}")
    print(f"{time.monotonic() - start:.3f} {got}")
    c.close()


ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["produce", "consume"])
ap.add_argument("--bootstrap", required=True)
ap.add_argument("--topic", required=True)
ap.add_argument("--size", type=int, default=1024)
ap.add_argument("--total-mb", type=int, default=2048)
ap.add_argument("--expect-bytes", type=int, default=0)
ap.add_argument("--partition-bytes", type=int, default=1048576)
ap.add_argument("--timeout", type=int, default=900)
a = ap.parse_args()
produce(a) if a.cmd == "produce" else consume(a)
