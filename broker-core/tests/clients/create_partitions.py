#!/usr/bin/env python3
"""kafka-python's admin grows a topic (CreatePartitions), and clients use the new partitions.

Creates TOPIC with 1 partition and writes one record to it; create_partitions to 3 must
succeed; metadata (a fresh producer's partitions_for) must list partitions 0, 1, 2 within a
deadline; a record sent to partition 2 must be acknowledged at offset 0 and read back by a
consumer assigned to partition 2, and partition 0 still holds its record. Shrinking to 2 must
fail with InvalidPartitionsError, and growing a topic that does not exist with
UnknownTopicOrPartitionError.
"""

import argparse
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, UnknownTopicOrPartitionError

from common import Deadline, expect, main


def grow(admin, topic, count):
    """None, or the error kafka-python raises for it."""
    try:
        admin.create_partitions({topic: NewPartitions(total_count=count)})
        return None
    except Exception as e:  # kafka-python raises the broker's error class
        return e


def run(args):
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=15000)
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all", request_timeout_ms=15000, max_block_ms=30000)
    try:
        admin.create_topics([NewTopic(args.topic, num_partitions=1, replication_factor=1)])
        first = producer.send(args.topic, value=b"before", partition=0).get(timeout=30)
        expect(first.offset == 0, f"the first record got offset {first.offset}")
        err = grow(admin, args.topic, 3)
        expect(err is None, f"create_partitions to 3 failed: {err!r}")
        deadline = Deadline(20, "a fresh producer's metadata lists 3 partitions")
        while True:
            fresh = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all", max_block_ms=10000)
            try:
                parts = fresh.partitions_for(args.topic)
            finally:
                fresh.close()
            if parts == {0, 1, 2}:
                break
            deadline.check(f"partitions {parts}")
            time.sleep(0.2)
        grown = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all", request_timeout_ms=15000, max_block_ms=30000)
        try:
            md = grown.send(args.topic, value=b"after", partition=2).get(timeout=30)
        finally:
            grown.close()
        expect((md.partition, md.offset) == (2, 0), f"the record to partition 2 landed at {md.partition}/{md.offset}")
        consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=None, enable_auto_commit=False, consumer_timeout_ms=10000)
        try:
            consumer.assign([TopicPartition(args.topic, 0), TopicPartition(args.topic, 2)])
            consumer.seek_to_beginning()
            seen = {}
            deadline = Deadline(20, "both records read back")
            while len(seen) < 2:
                for tp, records in consumer.poll(timeout_ms=500).items():
                    for r in records:
                        seen[(tp.partition, r.offset)] = r.value
                deadline.check(f"read {seen}")
        finally:
            consumer.close()
        expect(seen == {(0, 0): b"before", (2, 0): b"after"}, f"read back {seen}")
        err = grow(admin, args.topic, 2)
        expect(isinstance(err, InvalidPartitionsError), f"shrinking to 2: {err!r}, expected InvalidPartitionsError")
        err = grow(admin, args.topic + "-missing", 2)
        expect(isinstance(err, UnknownTopicOrPartitionError), f"growing a missing topic: {err!r}, expected UnknownTopicOrPartitionError")
        print(f"{args.topic}: grown to 3 partitions, written and read on partition 2")
    finally:
        producer.close()
        admin.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    args = ap.parse_args()
    main(lambda: run(args))
