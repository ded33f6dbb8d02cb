#!/usr/bin/env python3
"""A compacted topic end to end: created with confluent-kafka's AdminClient
(cleanup.policy=compact, small segments so they roll), keyed updates and tombstones produced,
the broker's cleaner given time, then read back from offset 0 by confluent-kafka and
kafka-python: every key's latest value (or its absence, for a key whose latest write is a
tombstone once delete.retention.ms has passed) at the offset its send reported, far fewer
records than were written, and offsets that only increase. A keyless record is refused. With --compression the
producer compresses its batches (and the cleaner must read and rewrite them in that codec);
kafka-python reads back only codecs it can without extra packages (none, gzip, snappy).
"""

import argparse
import time

from confluent_kafka import KafkaException, Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition as KPTopicPartition

from common import Deadline, expect, fail, main


def create(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
               "delete.retention.ms": "0"}
    for f in admin.create_topics([NewTopic(topic, 1, 1, config=configs)], request_timeout=15).values():
        f.result(timeout=15)


def produce(bootstrap, topic, keys, rounds, compression):
    """The latest (offset, value or None) of every key."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": compression})
    latest, errors = {}, []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)
        else:
            latest[msg.key().decode()] = (msg.offset(), None if msg.value() is None else msg.value().decode())

    for r in range(rounds):
        for k in range(keys):
            # Every key's last round is a tombstone for every fifth key.
            value = None if (r == rounds - 1 and k % 5 == 0) else f"value-{r}-{k}"
            p.produce(topic, key=f"key-{k:03d}", value=value, on_delivery=delivered)
        p.flush(30)
    expect(not errors, f"sends failed: {errors[:3]}")
    # A keyless record has no place in a compacted topic.
    refused = []
    p.produce(topic, value="no key", on_delivery=lambda err, msg: refused.append(err))
    p.flush(30)
    expect(refused and refused[0] is not None, f"a keyless record was accepted: {refused}")
    return latest


def read_confluent(bootstrap, topic, deadline):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compacted-reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    position = 0
    while position < end:
        deadline.check(f"confluent-kafka at {position} of {end}")
        m = c.poll(0.5)
        if m is None:
            position = c.position([TopicPartition(topic, 0)])[0].offset
            continue
        if m.error():
            fail(f"confluent-kafka: {m.error()}")
        out.append((m.offset(), m.key().decode(), None if m.value() is None else m.value().decode()))
        position = m.offset() + 1
    c.close()
    return out


def read_kafka_python(bootstrap, topic):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=4000)
    tp = KPTopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    out = [(m.offset, m.key.decode(), None if m.value is None else m.value.decode()) for m in c]
    c.close()
    return out


def check(records, latest, written, who):
    offsets = [o for o, _, _ in records]
    expect(offsets == sorted(set(offsets)), f"{who}: offsets do not increase: {offsets[:20]}")
    last = {}
    for o, k, v in records:
        last[k] = (o, v)
    for k, (o, v) in latest.items():
        if v is None:
            expect(k not in last or last[k] == (o, None), f"{who}: {k} was deleted at {o} but reads {last.get(k)}")
        else:
            expect(last.get(k) == (o, v), f"{who}: {k} should be {v!r} at {o}, reads {last.get(k)}")
    expect(len(records) * 4 < written, f"{who}: {len(records)} of {written} records left: nothing was compacted")


def body():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", default="compacted")
    ap.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    args = ap.parse_args()
    keys, rounds = 50, 40
    create(args.bootstrap, args.topic)
    latest = produce(args.bootstrap, args.topic, keys, rounds, args.compression)
    deadline = Deadline(60, "the cleaner to compact the topic")
    while True:
        records = read_confluent(args.bootstrap, args.topic, Deadline(30, "a read of the topic"))
        if len(records) * 4 < keys * rounds:
            break
        deadline.check(f"{len(records)} records still there")
        time.sleep(1)
    check(records, latest, keys * rounds, "confluent-kafka")
    if args.compression in ("none", "gzip", "snappy"):
        check(read_kafka_python(args.bootstrap, args.topic), latest, keys * rounds, "kafka-python")
    print(f"{keys * rounds} records written ({args.compression}), {len(records)} left after compaction")


if __name__ == "__main__":
    main(body)
