#!/usr/bin/env python3
"""AdminClient against the broker: create, create again, bad name, describe configs, delete.

Expects a broker with no topic named `seedlog-admin` yet. Checks, in order: create_topics with
3 partitions succeeds and metadata lists partitions 0, 1, 2, each led by a broker that metadata
lists; creating it again fails with TOPIC_ALREADY_EXISTS; "bad/name" fails with
TOPIC_EXCEPTION (Kafka's InvalidTopicException); describe_configs lists retention.ms,
segment.bytes and cleanup.policy with sane values, and fails with UNKNOWN_TOPIC_OR_PART for a
topic that does not exist; delete_topics succeeds and metadata stops listing the topic;
deleting it again fails with UNKNOWN_TOPIC_OR_PART.
"""

import argparse
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from common import Deadline, expect, fail, main

TOPIC = "seedlog-admin"


def outcome(future, timeout=20):
    """None on success, else the KafkaError the broker answered with."""
    try:
        future.result(timeout=timeout)
        return None
    except KafkaException as e:
        return e.args[0]


def expect_error(err, code, what):
    if err is None:
        fail(f"{what}: succeeded, expected {KafkaError(code).name()}")
    if err.code() != code:
        fail(f"{what}: failed with {err.name()} ({err.str()}), expected {KafkaError(code).name()}")


def wait_metadata(admin, what, predicate):
    """Metadata (all topics, so nothing is auto-created) until predicate(md) holds."""
    deadline = Deadline(15, what)
    while True:
        md = admin.list_topics(timeout=max(1.0, min(5.0, deadline.left())))
        if predicate(md):
            return md
        deadline.check(f"metadata lists topics {sorted(md.topics)}")
        time.sleep(0.2)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    args = ap.parse_args()
    admin = AdminClient({"bootstrap.servers": args.bootstrap})

    md = admin.list_topics(timeout=10)
    expect(TOPIC not in md.topics, f"{TOPIC!r} exists before the test created it")
    broker_addrs = {f"{b.host}:{b.port}" for b in md.brokers.values()}
    expect(broker_addrs == {args.bootstrap},
           f"metadata lists brokers {sorted(broker_addrs)}, expected only the advertised {args.bootstrap}")

    err = outcome(admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC])
    expect(err is None, f"create_topics({TOPIC!r}, 3 partitions) failed: {err}")
    # As in KRaft, CreateTopics answers once the controller committed the topic; its leaders
    # take their role a moment later (here: once the new replicas are durable).
    md = wait_metadata(admin, f"{TOPIC!r} in metadata with its leaders after create",
                       lambda md: TOPIC in md.topics and all(p.leader >= 0 for p in md.topics[TOPIC].partitions.values()))
    t = md.topics[TOPIC]
    expect(t.error is None, f"metadata for {TOPIC!r} carries error {t.error}")
    expect(sorted(t.partitions) == [0, 1, 2], f"{TOPIC!r} has partitions {sorted(t.partitions)}, created 3")
    for p in t.partitions.values():
        expect(p.error is None, f"{TOPIC!r} partition {p.id}: error {p.error}")
        expect(p.leader in md.brokers, f"{TOPIC!r} partition {p.id}: leader {p.leader} is not a listed broker")
        expect(list(p.replicas) == [p.leader] and list(p.isrs) == [p.leader],
               f"{TOPIC!r} partition {p.id}: replicas {p.replicas}, isr {p.isrs}, expected [{p.leader}] on one node")

    err = outcome(admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC])
    expect_error(err, KafkaError.TOPIC_ALREADY_EXISTS, f"create_topics({TOPIC!r}) a second time")

    err = outcome(admin.create_topics([NewTopic("bad/name", num_partitions=1, replication_factor=1)])["bad/name"])
    expect_error(err, KafkaError.TOPIC_EXCEPTION, 'create_topics("bad/name")')
    md = admin.list_topics(timeout=10)
    expect("bad/name" not in md.topics, '"bad/name" was rejected yet metadata lists it')

    resource = ConfigResource(ResourceType.TOPIC, TOPIC)
    try:
        configs = admin.describe_configs([resource])[resource].result(timeout=20)
    except KafkaException as e:
        fail(f"describe_configs({TOPIC!r}) failed: {e.args[0]}")
    for name in ("retention.ms", "segment.bytes", "cleanup.policy"):
        expect(name in configs, f"describe_configs({TOPIC!r}) lacks {name}; it has {sorted(configs)}")
    retention_ms = int(configs["retention.ms"].value)
    expect(retention_ms == -1 or retention_ms > 0, f"retention.ms = {retention_ms}")
    expect(int(configs["segment.bytes"].value) > 0, f"segment.bytes = {configs['segment.bytes'].value}")
    expect(configs["cleanup.policy"].value == "delete", f"cleanup.policy = {configs['cleanup.policy'].value!r}")

    missing = ConfigResource(ResourceType.TOPIC, "seedlog-no-such-topic")
    err = outcome(admin.describe_configs([missing])[missing])
    expect_error(err, KafkaError.UNKNOWN_TOPIC_OR_PART, "describe_configs of a topic that does not exist")

    err = outcome(admin.delete_topics([TOPIC])[TOPIC])
    expect(err is None, f"delete_topics({TOPIC!r}) failed: {err}")
    wait_metadata(admin, f"{TOPIC!r} gone from metadata after delete", lambda md: TOPIC not in md.topics)
    err = outcome(admin.delete_topics([TOPIC])[TOPIC])
    expect_error(err, KafkaError.UNKNOWN_TOPIC_OR_PART, f"delete_topics({TOPIC!r}) a second time")


if __name__ == "__main__":
    main(run)
