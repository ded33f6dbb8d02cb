#!/usr/bin/env python3
"""Topic configs and DeleteRecords with real admin clients, in two phases around a restart.

--phase change (a broker with neither topic yet):
  * confluent-kafka AdminClient.create_topics with configs; describe_configs reports them as
    DYNAMIC_TOPIC_CONFIG and the rest as DEFAULT_CONFIG;
  * five records, each in its own segment (segment.ms=100), then incremental_alter_configs sets
    retention.ms=1000 and APPENDs compact to cleanup.policy; describe_configs shows both as
    DYNAMIC_TOPIC_CONFIG, segment.ms untouched; a bad value (retention.ms=-7) and an unknown
    name are refused with INVALID_CONFIG naming the config;
  * retention applies: the low watermark reaches 4 (every closed segment is older than 1 s)
    within a bounded wait;
  * kafka-python's alter_configs with incremental=False (the legacy AlterConfigs, which replaces
    the whole set: the client first describes the topic and sends back every DYNAMIC_TOPIC_CONFIG
    with its change) sets message.timestamp.type=LogAppendTime and keeps the others; a record
    produced with a 1970 timestamp comes back stamped with the broker's clock, LogAppendTime;
  * delete_records on a second topic moves its low watermark to 6: a consumer from the beginning
    starts at offset 6; an offset past the high watermark is OFFSET_OUT_OF_RANGE.
--phase restarted (the same data directory, a new broker process): every override is still
  reported as DYNAMIC_TOPIC_CONFIG and the second topic still starts at 6.
"""

import argparse
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic, ResourceType

from common import Deadline, expect, fail, main

DYNAMIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value


def result(future, what, timeout=20):
    try:
        return future.result(timeout=timeout)
    except KafkaException as e:
        fail(f"{what} failed: {e.args[0]}")


def refused(future, code, what, mentions):
    try:
        future.result(timeout=20)
    except KafkaException as e:
        err = e.args[0]
        expect(err.code() == code, f"{what}: failed with {err.name()} ({err.str()}), expected {KafkaError(code).name()}")
        expect(mentions in err.str(), f"{what}: the reason {err.str()!r} does not name {mentions!r}")
        return
    fail(f"{what}: succeeded, expected {KafkaError(code).name()}")


def describe(admin, topic):
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = result(admin.describe_configs([resource])[resource], f"describe_configs({topic!r})")
    return {name: (entry.value, entry.source) for name, entry in configs.items()}


def expect_configs(admin, topic, want, when):
    """Each (value, source) in `want` is what describe_configs reports."""
    have = describe(admin, topic)
    for name, (value, source) in want.items():
        expect(name in have, f"{when}: describe_configs({topic!r}) lacks {name}; it has {sorted(have)}")
        got = have[name]
        expect(got == (value, source), f"{when}: {name} = {got[0]!r} from source {got[1]}, expected {value!r} from source {source}")


def incremental(admin, topic, entries):
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    return admin.incremental_alter_configs([resource])[resource]


def produce(bootstrap, topic, values, pause=0.0, timestamp=None, key=None):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    delivered = []

    def report(err, msg):
        if err is not None:
            fail(f"producing to {topic!r}: {err}")
        delivered.append((msg.offset(), msg.timestamp()))

    for v in values:
        kwargs = {"timestamp": timestamp} if timestamp is not None else {}
        producer.produce(topic, key=key, value=v, partition=0, on_delivery=report, **kwargs)
        left = producer.flush(20)
        expect(left == 0, f"producing to {topic!r}: {left} records not delivered within 20 s")
        time.sleep(pause)
    return delivered


def watermarks(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "seedlog-topic-configs", "enable.auto.commit": False})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()


def read_from(bootstrap, topic, offset, count):
    """`count` records of partition 0 from `offset` (OFFSET_BEGINNING: the low watermark)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "seedlog-topic-configs", "enable.auto.commit": False, "auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        deadline, out = Deadline(20, f"reading {count} records of {topic!r}"), []
        while len(out) < count:
            deadline.check(f"{len(out)} so far")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                fail(f"reading {topic!r}: {msg.error()}")
            out.append((msg.offset(), msg.value(), msg.timestamp()))
        return out
    finally:
        consumer.close()


def change(args, admin):
    t, d = args.topic, args.topic + "-delete"
    created = admin.create_topics([NewTopic(t, 1, 1, config={"retention.ms": "3600000", "segment.ms": "100"}), NewTopic(d, 1, 1)])
    for name, future in created.items():
        result(future, f"create_topics({name!r})")
    expect_configs(admin, t, {"retention.ms": ("3600000", DYNAMIC), "segment.ms": ("100", DYNAMIC), "segment.bytes": ("1073741824", DEFAULT),
                              "cleanup.policy": ("delete", DEFAULT)}, "after create")

    produce(args.bootstrap, t, [b"r%d" % i for i in range(5)], pause=0.3)
    low, high = watermarks(args.bootstrap, t)
    expect((low, high) == (0, 5), f"{t}: watermarks ({low}, {high}) after five records, expected (0, 5)")

    entries = [ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
               ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)]
    result(incremental(admin, t, entries), "incremental_alter_configs(retention.ms=1000, cleanup.policy+=compact)")
    expect_configs(admin, t, {"retention.ms": ("1000", DYNAMIC), "cleanup.policy": ("delete,compact", DYNAMIC), "segment.ms": ("100", DYNAMIC)},
                   "after incremental_alter_configs")
    bad = [ConfigEntry("retention.ms", "-7", incremental_operation=AlterConfigOpType.SET)]
    refused(incremental(admin, t, bad), KafkaError.INVALID_CONFIG, "retention.ms=-7", "retention.ms")
    unknown = [ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)]
    refused(incremental(admin, t, unknown), KafkaError.INVALID_CONFIG, "no.such.config=1", "no.such.config")
    expect_configs(admin, t, {"retention.ms": ("1000", DYNAMIC)}, "after the refused changes")

    deadline = Deadline(20, f"{t}: retention.ms=1000 deleting the closed segments")
    while True:
        low, high = watermarks(args.bootstrap, t)
        if low == 4:
            break
        expect(low < 4, f"{t}: low watermark {low} passed the active segment's first offset 4")
        deadline.check(f"watermarks ({low}, {high})")
        time.sleep(0.3)
    print(f"{t}: retention moved the low watermark to {low} (high {high})")

    legacy_alter(args.bootstrap, t)
    expect_configs(admin, t, {"message.timestamp.type": ("LogAppendTime", DYNAMIC), "retention.ms": ("1000", DYNAMIC),
                              "cleanup.policy": ("delete,compact", DYNAMIC), "segment.ms": ("100", DYNAMIC)},
                   "after kafka-python's AlterConfigs")
    before = int(time.time() * 1000)
    # Keyed: the topic is compacted now, and a compacted topic refuses keyless records.
    [(offset, _)] = produce(args.bootstrap, t, [b"stamped"], timestamp=1_000, key=b"k")
    after = int(time.time() * 1000)
    [(_, value, (kind, ts))] = read_from(args.bootstrap, t, offset, 1)
    expect(value == b"stamped", f"{t}@{offset}: read {value!r}")
    expect(kind == TIMESTAMP_LOG_APPEND_TIME, f"{t}@{offset}: timestamp type {kind}, expected LogAppendTime ({TIMESTAMP_LOG_APPEND_TIME})")
    expect(before - 1000 <= ts <= after + 1000, f"{t}@{offset}: timestamp {ts} is not the broker's clock ({before}..{after}); produced with 1000")

    produce(args.bootstrap, d, [b"d%d" % i for i in range(10)])
    [(_, future)] = admin.delete_records([TopicPartition(d, 0, 6)]).items()
    low = result(future, f"delete_records({d}@6)").low_watermark
    expect(low == 6, f"delete_records({d}@6): low watermark {low}")
    check_deleted(args.bootstrap, d, "after delete_records")
    [(_, future)] = admin.delete_records([TopicPartition(d, 0, 42)]).items()
    refused(future, KafkaError.OFFSET_OUT_OF_RANGE, f"delete_records({d}@42), past the high watermark 10", "")


def legacy_alter(bootstrap, topic):
    from kafka.admin import ConfigResource as KpResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        out = admin.alter_configs([KpResource(ConfigResourceType.TOPIC, topic, configs={"message.timestamp.type": "LogAppendTime"})], incremental=False)
        print(f"kafka-python alter_configs (AlterConfigs): {out}")
        status = out.get("topic", {}).get(topic)
        expect(str(status) == "OK", f"kafka-python alter_configs(message.timestamp.type=LogAppendTime): {out}")
    finally:
        admin.close()


def check_deleted(bootstrap, d, when):
    low, high = watermarks(bootstrap, d)
    expect((low, high) == (6, 10), f"{when}: {d} watermarks ({low}, {high}), expected (6, 10)")
    got = [(o, v) for o, v, _ in read_from(bootstrap, d, OFFSET_BEGINNING, 4)]
    expect(got == [(i, b"d%d" % i) for i in range(6, 10)], f"{when}: {d} from the beginning reads {got}")


def restarted(args, admin):
    t, d = args.topic, args.topic + "-delete"
    expect_configs(admin, t, {"retention.ms": ("1000", DYNAMIC), "cleanup.policy": ("delete,compact", DYNAMIC), "segment.ms": ("100", DYNAMIC),
                              "message.timestamp.type": ("LogAppendTime", DYNAMIC), "segment.bytes": ("1073741824", DEFAULT)}, "after a restart")
    check_deleted(args.bootstrap, d, "after a restart")


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--phase", choices=["change", "restarted"], required=True)
    args = ap.parse_args()
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    {"change": change, "restarted": restarted}[args.phase](args, admin)


if __name__ == "__main__":
    main(run)
