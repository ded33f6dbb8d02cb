"""Shared helpers for the real-client scripts: failing loudly, deadlines, topic metadata.

Every script is a small CLI run by `tests/all/real_clients.rs`. A script must never hang (each
wait has a deadline) and must never pass on "no error" alone: it compares what it reads with
what it wrote, field by field, and exits non-zero with a message naming the first mismatch.
"""

import sys
import time


class Mismatch(Exception):
    """What the broker returned is not what the script expected."""


def fail(message):
    """Stop the script: a mismatch or an error, said in one line the Rust test shows."""
    raise Mismatch(message)


def expect(condition, message):
    if not condition:
        fail(message)


def main(body):
    """Run `body()` and turn a Mismatch into exit code 1 with a clear message on stderr."""
    script = sys.argv[0].rsplit("/", 1)[-1]
    try:
        body()
    except Mismatch as e:
        print(f"{script}: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{script}: ok", file=sys.stderr)


class Deadline:
    """A wall-clock budget for one phase; `left()` feeds client timeouts."""

    def __init__(self, seconds, what):
        self.end = time.monotonic() + seconds
        self.seconds = seconds
        self.what = what

    def left(self):
        return max(0.0, self.end - time.monotonic())

    def expired(self):
        return self.left() == 0.0

    def check(self, progress=""):
        if self.expired():
            fail(f"{self.what}: not done within {self.seconds} s{': ' + progress if progress else ''}")


def confluent_partitions(client, topic, deadline):
    """Partition ids of `topic` per the broker's metadata (confluent Producer/Consumer/Admin)."""
    from confluent_kafka import KafkaException

    while True:
        try:
            md = client.list_topics(topic, timeout=max(1.0, min(5.0, deadline.left())))
        except KafkaException as e:
            deadline.check(f"metadata for {topic!r}: {e}")
            time.sleep(0.2)
            continue
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return sorted(t.partitions)
        deadline.check(f"metadata for {topic!r}: {t.error if t is not None else 'topic not listed'}")
        time.sleep(0.2)


def group_by_partition(records):
    """{partition: [record, ...] sorted by offset} for dicts with 'partition' and 'offset'."""
    out = {}
    for r in records:
        out.setdefault(r["partition"], []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r["offset"])
    return out


def check_dense(by_partition, what):
    """Offsets in each partition are exactly 0, 1, 2, ... (a fresh topic, nothing lost or doubled)."""
    for p, rs in sorted(by_partition.items()):
        offsets = [r["offset"] for r in rs]
        for i, offset in enumerate(offsets):
            if offset != i:
                fail(f"{what}: partition {p}: offsets not dense from 0: position {i} has offset "
                     f"{offset} (nearby: {offsets[max(0, i - 2):i + 3]})")


def confluent_read_all(bootstrap, topic, partitions, deadline, start=None, isolation="read_uncommitted"):
    """Every record of `partitions` from the beginning (or from `start[p]`) to the end, read
    with `isolation` (Kafka's isolation.level: read_committed ends at the last stable offset).

    A confluent Consumer with a group.id (librdkafka wants one) but no subscription: assign()
    with explicit offsets and no commits, so no group coordinator is ever needed. Stops when
    each partition reports end-of-partition (the Fetch high watermark). Returns dicts with
    partition, offset, key, value (bytes or None), headers (list of (str, bytes)), and
    timestamp (type, ms).
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "seedlog-real-clients",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "isolation.level": isolation,
    })
    try:
        consumer.assign([TopicPartition(topic, p, (start or {}).get(p, OFFSET_BEGINNING)) for p in partitions])
        records, at_end = [], set()
        while at_end != set(partitions):
            deadline.check(f"reading {topic!r}: {len(records)} records so far, at end of partitions "
                           f"{sorted(at_end)} of {partitions}")
            msg = consumer.poll(min(1.0, max(0.1, deadline.left())))
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                fail(f"reading {topic!r} partition {msg.partition()}: consumer error {err}")
            at_end.discard(msg.partition())
            records.append({
                "partition": msg.partition(),
                "offset": msg.offset(),
                "key": msg.key(),
                "value": msg.value(),
                "headers": [(k, v) for k, v in (msg.headers() or [])],
                "timestamp": msg.timestamp(),
            })
        return records
    finally:
        consumer.close()


def check_records_match(topic, want, have, record, source):
    """Each record read (`have`, by partition) is the one produced (`want`, by partition) at the
    same offset: key, value and headers as `record(i)` built them, timestamp as `source` said."""
    expect(sorted(have) == sorted(want), f"{topic}: read from partitions {sorted(have)}, produced to {sorted(want)}")
    for p in sorted(want):
        expect(len(have[p]) == len(want[p]), f"{topic}: partition {p}: read {len(have[p])} records, produced {len(want[p])}")
        for w, h in zip(want[p], have[p]):
            key, value, headers = record(w["i"])
            where = f"{topic}: partition {p} offset {w['offset']}"
            expect(h["offset"] == w["offset"], f"{where}: read offset {h['offset']} in its place")
            expect(h["key"] == key, f"{where}: key {h['key']!r}, produced {key!r}")
            expect(h["value"] == value, f"{where}: value {h['value']!r}, produced {value!r}")
            expect(h["headers"] == headers, f"{where}: headers {h['headers']!r}, produced {headers!r}")
            expect(h["timestamp"] == w["timestamp"], f"{where}: timestamp {h['timestamp']}, {source} said {w['timestamp']}")


def kafka_python_read(bootstrap, topic, isolation, end, deadline, record=lambda r: r.value.decode()):
    """Partition 0 of `topic` from the beginning up to offset `end`, read by kafka-python with
    `isolation` (read_committed or read_uncommitted), each record as `record(r)` makes it."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=1000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        while consumer.position(tp) < end:
            deadline.check(f"kafka-python {isolation}: at {consumer.position(tp)} of {end}: {len(out)} records")
            for batch in consumer.poll(timeout_ms=500).values():
                out.extend(record(r) for r in batch)
        return out
    finally:
        consumer.close()


def produce_placed(bootstrap, topic, values, partition_of, deadline, batch_records):
    """Produces each of `values` (str) to partition `partition_of(index)` with confluent-kafka,
    acks=all and idempotent, `batch_records` to a batch; returns {value: (partition, offset)}.
    Fails unless every record was acknowledged within the deadline."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.num.messages": batch_records, "message.timeout.ms": 30000})
    placed, failed = {}, []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(f"{msg.value()!r}: {err}")
        else:
            placed[msg.value().decode()] = (msg.partition(), msg.offset())

    for index, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, value.encode(), partition=partition_of(index), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(max(1.0, deadline.left()))
    expect(left == 0, f"produce to {topic!r}: {left} records not acknowledged within the deadline")
    expect(not failed, f"produce to {topic!r}: {len(failed)} failed, first: {failed[:3]}")
    expect(len(placed) == len(values), f"produce to {topic!r}: {len(placed)} acknowledged of {len(values)}")
    return placed


def share_reset_earliest(admin, group):
    """Sets share group `group`'s `share.auto.offset.reset` to earliest (a GROUP config
    resource, IncrementalAlterConfigs) and checks it with describe_configs."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    try:
        admin.incremental_alter_configs([resource])[resource].result(timeout=20)
    except KafkaException as e:
        fail(f"incremental_alter_configs(GROUP {group!r}, share.auto.offset.reset=earliest) failed: {e.args[0]}")
    described = ConfigResource(ResourceType.GROUP, group)
    try:
        configs = admin.describe_configs([described])[described].result(timeout=20)
    except KafkaException as e:
        fail(f"describe_configs(GROUP {group!r}) failed: {e.args[0]}")
    reset = configs.get("share.auto.offset.reset")
    expect(reset is not None and reset.value == "earliest",
           f"group {group!r}: share.auto.offset.reset is {reset.value if reset else None!r} after setting earliest")


def share_args(doc, n, phases=None, state_help=None):
    """The share-group scripts' arguments: --bootstrap, --topic, --group, --n (default `n`),
    --debug; with `phases` (names) also --phase and --state (`state_help` says what the file
    carries between the phases). Returns the parsed arguments."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--n", type=int, default=n)
    if phases:
        ap.add_argument("--phase", choices=list(phases), required=True)
        ap.add_argument("--state", required=True, help=state_help)
    ap.add_argument("--debug", action="store_true", help="librdkafka debug=protocol,cgrp,fetch on every consumer")
    return ap.parse_args()


def scram_login(bootstrap, user, password):
    """A confluent-kafka config that logs in as `user` with SCRAM-SHA-256 over SASL_PLAINTEXT."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": password}


def acl_start(doc, topics):
    """The ACL scripts' start: parses --bootstrap, logs in as the super user `admin`, adds user
    alice (password alice-secret) and creates `topics` (name -> partitions, replication 1).
    Returns (the arguments, admin's config, an AdminClient)."""
    import argparse
    from confluent_kafka.admin import AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    args = ap.parse_args()
    admin_config = scram_login(args.bootstrap, "admin", "admin-secret")
    admin = AdminClient(admin_config)
    alice = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-secret")
    done = admin.alter_user_scram_credentials([alice])
    expect(all(f.exception(30) is None for f in done.values()), "adding alice")
    for t, f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], request_timeout=30).items():
        f.result(30)
    return args, admin_config, admin
