#!/usr/bin/env python3
"""Old clients: kafka-python pinned to Kafka 0.8.2, 0.9 and 0.10 (api_version), as clients from
before Kafka 4.0 still speak. Kafka 4.0 removed the versions they send (KIP-896); Kafka 3.9
served them, and so must this broker by default.

For each pinned version: a producer sends N keyed records in compressed wrapper messages (lz4
for 0.8.2, with the header checksum clients before 0.10 wrote, KAFKA-3160; gzip for 0.9, magic
0; lz4 for 0.10, magic 1); a group consumer reads them all back in order and commits; then
N/20 more are sent and a second consumer of the same group must read exactly those (it resumes
from the commit). The requests each client sent are read from its debug log and must include
the old versions it is pinned to (Produce v0/v1/v2, Fetch v0/v1/v2, OffsetCommit v1/v2), so the
test fails if a newer client stops sending them.
"""

import argparse
import io
import logging
import re

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from common import Deadline, expect, fail, main

PINNED = [
    # api_version, compression, versions that must have been sent
    ((0, 8, 2), "lz4", {("ProduceRequest", 0), ("FetchRequest", 0), ("OffsetCommitRequest", 1), ("OffsetFetchRequest", 1)}),
    ((0, 9), "gzip", {("ProduceRequest", 1), ("FetchRequest", 1), ("OffsetCommitRequest", 2), ("JoinGroupRequest", 0)}),
    ((0, 10, 0), "lz4", {("ProduceRequest", 2), ("FetchRequest", 2), ("OffsetCommitRequest", 2), ("JoinGroupRequest", 0)}),
]


def produce(bootstrap, api_version, compression, topic, first, n):
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version, compression_type=compression,
                             acks="all", request_timeout_ms=15000, max_block_ms=30000)
    try:
        futures = [producer.send(topic, key=b"k%06d" % i, value=b"v%06d" % i) for i in range(first, first + n)]
        producer.flush(timeout=45)
        for i, f in enumerate(futures):
            md = f.get(timeout=5)
            expect(md.offset == first + i, f"{topic}: record {first + i} got offset {md.offset}")
    finally:
        producer.close(timeout=10)


def consume(bootstrap, api_version, topic, group, first, n):
    deadline = Deadline(60, f"{topic}: group {group} reading {n} records from {first}")
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, api_version=api_version, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, request_timeout_ms=15000)
    try:
        got = []
        while len(got) < n:
            deadline.check(f"{len(got)} read")
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
        expect(len(got) == n, f"{topic}: read {len(got)} records, expected {n}")
        for j, r in enumerate(got):
            i = first + j
            expect((r.offset, r.key, r.value) == (i, b"k%06d" % i, b"v%06d" % i),
                   f"{topic}: record {j} read is offset {r.offset} {r.key!r}={r.value!r}, expected offset {i}")
        consumer.commit()
        committed = consumer.committed(TopicPartition(topic, 0))
        expect(committed == first + n, f"{topic}: committed {committed}, expected {first + n}")
        # Nothing more: a consumer that resumes from its commit reads no record twice.
        extra = sum(len(rs) for rs in consumer.poll(timeout_ms=1000).values())
        expect(extra == 0, f"{topic}: {extra} records past the {n} expected")
    finally:
        consumer.close()


def body():
    try:
        import lz4, xxhash  # noqa: F401  kafka-python's lz4 codec needs both
    except ImportError as e:
        fail(f"kafka-python's lz4 codec is missing ({e}): `pip install lz4 xxhash` (scripts/test.sh does)")
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    kafka_log = logging.getLogger("kafka")
    kafka_log.setLevel(logging.DEBUG)
    kafka_log.addHandler(handler)
    for api_version, compression, must in PINNED:
        name = "old-" + "-".join(map(str, api_version))
        log.seek(0)
        log.truncate()
        produce(args.bootstrap, api_version, compression, name, 0, args.n)
        consume(args.bootstrap, api_version, name, name + "-group", 0, args.n)
        more = args.n // 20
        produce(args.bootstrap, api_version, compression, name, args.n, more)
        consume(args.bootstrap, api_version, name, name + "-group", args.n, more)
        sent = {(k, int(v)) for k, v in re.findall(r"Request \d+: (\w+)\(version=(\d+)", log.getvalue())}
        missing = must - sent
        if missing:
            fail(f"kafka-python at {api_version} did not send {sorted(missing)} (it sent {sorted(sent)})")


if __name__ == "__main__":
    main(body)
