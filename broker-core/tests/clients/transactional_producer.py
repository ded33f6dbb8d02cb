#!/usr/bin/env python3
"""Real transactional producers against the broker's transaction coordinator.

For each client (confluent-kafka / librdkafka, then kafka-python), with a transactional id and a
two-partition topic of its own:
1. init_transactions; a transaction over both partitions committed; one aborted (its records
   delivered first); one more committed.
2. A transaction left open (records sent and flushed, never ended), then a second producer with
   the same transactional id: its init_transactions fences the first and aborts the open
   transaction; its own transaction commits; the first producer, fenced, cannot commit.
3. Offsets sent to a transaction (send_offsets_to_transaction, the consume-transform-produce
   step): a committed transaction's offset becomes the group's committed offset, an aborted
   one's never does.
Then reads both partitions to their ends with read_committed (exactly the committed values, in
order) and read_uncommitted (every value sent), with confluent-kafka's consumer.
"""

import argparse
import os
import time

from common import Deadline, confluent_read_all, expect, fail, main

COMMITTED = {0: ["c1", "c3", "b1"], 1: ["c2"]}
ALL = {0: ["c1", "a1", "c3", "z1", "b1"], 1: ["c2", "a2"]}


STARTED = time.monotonic()


def step(what):
    """Where the run is, printed at once: a run killed by its deadline shows its last step."""
    print(f"{time.monotonic() - STARTED:6.1f} s  {what}", flush=True)


def confluent_producer(bootstrap, txn_id):
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 60000,
              "message.timeout.ms": 30000}
    if os.environ.get("SEEDLOG_RDKAFKA_DEBUG"):
        config["debug"] = os.environ["SEEDLOG_RDKAFKA_DEBUG"]
    return Producer(config)


def run_confluent(bootstrap, topic, txn_id):
    from confluent_kafka import KafkaException

    p = confluent_producer(bootstrap, txn_id)
    p.init_transactions(30)
    step("confluent: initialized")
    for values, commit in ([("c1", 0), ("c2", 1)], True), ([("a1", 0), ("a2", 1)], False), ([("c3", 0)], True):
        p.begin_transaction()
        for v, part in values:
            p.produce(topic, v.encode(), partition=part)
        if commit:
            p.commit_transaction(30)
        else:
            # Delivered first: an abort drops what the client has not sent yet.
            expect(p.flush(30) == 0, "confluent: the aborted transaction's records were not delivered")
            p.abort_transaction(30)
    # Left open: sent and flushed, never ended.
    p.begin_transaction()
    p.produce(topic, b"z1", partition=0)
    expect(p.flush(30) == 0, "confluent: the open transaction's record was not delivered")
    step("confluent: three transactions ended, one left open")
    q = confluent_producer(bootstrap, txn_id)
    q.init_transactions(60)
    step("confluent: the second producer initialized (the first fenced)")
    q.begin_transaction()
    q.produce(topic, b"b1", partition=0)
    q.commit_transaction(30)
    step("confluent: the second producer committed")
    try:
        p.commit_transaction(10)
        fail("confluent: the fenced producer committed")
    except KafkaException as e:
        err = e.args[0]
        expect(err.fatal() or "fenced" in err.str().lower(), f"confluent: the fenced producer's commit failed, but not as fenced: {err}")
    step("confluent: the fenced producer's commit refused")
    confluent_offsets(bootstrap, topic, q)
    step("confluent: offsets sent to transactions")


def confluent_offsets(bootstrap, topic, producer):
    from confluent_kafka import Consumer, TopicPartition

    group = f"seedlog-eos-{topic}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        # The group's coordinator first: the first FindCoordinator of a group creates
        # __consumer_offsets and is answered COORDINATOR_NOT_AVAILABLE until its partitions lead,
        # as Kafka does. librdkafka's send_offsets_to_transaction gives up looking after three
        # such answers and then waits forever, its timeout ignored (librdkafka issue 5456): a
        # loaded machine that took over 300 ms to create the topic hung this script.
        consumer.committed([TopicPartition(topic, 0)], timeout=30)
        step("confluent: the group's coordinator answers")
        for offset, commit in (3, True), (5, False):
            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], consumer.consumer_group_metadata(), 30)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        got = consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        expect(got == 3, f"confluent: the group's committed offset is {got}; the committed transaction sent 3, the aborted one 5")
    finally:
        consumer.close()


def run_kafka_python(bootstrap, topic, txn_id):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    def producer():
        return KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, transaction_timeout_ms=60000)

    p = producer()
    p.init_transactions()
    step("kafka-python: initialized")
    for values, commit in ([("c1", 0), ("c2", 1)], True), ([("a1", 0), ("a2", 1)], False), ([("c3", 0)], True):
        p.begin_transaction()
        for v, part in values:
            p.send(topic, v.encode(), partition=part)
        if commit:
            p.commit_transaction()
        else:
            # Delivered first: an abort drops what the client has not sent yet.
            p.flush(timeout=30)
            p.abort_transaction()
    p.begin_transaction()
    p.send(topic, b"z1", partition=0).get(timeout=30)
    step("kafka-python: three transactions ended, one left open")
    q = producer()
    q.init_transactions()
    q.begin_transaction()
    q.send(topic, b"b1", partition=0)
    q.commit_transaction()
    step("kafka-python: the second producer committed")
    kafka_python_offsets(bootstrap, topic, q)
    step("kafka-python: offsets sent to transactions")
    q.close(timeout=10)
    try:
        p.commit_transaction()
        fail("kafka-python: the fenced producer committed")
    except KafkaError as e:
        expect("fenced" in type(e).__name__.lower() or "fenced" in str(e).lower() or "epoch" in str(e).lower(),
               f"kafka-python: the fenced producer's commit failed, but not as fenced: {e!r}")
    p.close(timeout=5)


def kafka_python_offsets(bootstrap, topic, producer):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    group = f"seedlog-eos-{topic}"
    tp = TopicPartition(topic, 0)
    for offset, commit in (3, True), (5, False):
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, group)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        got = consumer.committed(tp)
        expect(got == 3, f"kafka-python: the group's committed offset is {got}; the committed transaction sent 3, the aborted one 5")
    finally:
        consumer.close()


def read(bootstrap, topic, isolation, deadline):
    """{partition: [value, ...]} of both partitions from the start to their ends."""
    values = {0: [], 1: []}
    for r in confluent_read_all(bootstrap, topic, [0, 1], deadline, isolation=isolation):
        values[r["partition"]].append(r["value"].decode())
    return values


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
    ap.add_argument("--topic", required=True, help="a two-partition topic of this run's own")
    args = ap.parse_args()
    txn_id = f"seedlog-{args.client}"
    {"confluent": run_confluent, "kafka-python": run_kafka_python}[args.client](args.bootstrap, args.topic, txn_id)
    for isolation, want in (("read_committed", COMMITTED), ("read_uncommitted", ALL)):
        step(f"{args.client}: reading {isolation}")
        got = read(args.bootstrap, args.topic, isolation, Deadline(60, f"{args.client} {isolation}"))
        expect(got == want, f"{args.client} {isolation}: {got}, expected {want}")
    print(f"{args.client}: committed, aborted and fenced transactions read back as their outcomes say")


if __name__ == "__main__":
    main(run)
