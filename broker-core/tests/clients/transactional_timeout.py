#!/usr/bin/env python3
"""A hung transaction is aborted by the coordinator once its timeout passes.

Run by `tests/all/transactions.rs` against a broker checking open transactions every
--check-ms. A confluent-kafka transactional producer with transaction.timeout.ms = --timeout-ms
sends two records to partition 0 of --topic (delivered: they are in the log, their transaction
open) and then hangs. Within the timeout plus two checks, a read_committed consumer must read
partition 0 to its end (the last stable offset no longer held back) without those records; the
hung producer's commit must then fail (its epoch was bumped by the abort), and a new producer of
the same transactional id commits a transaction whose record read_committed shows.
"""

import argparse
import json
import time

from confluent_kafka import KafkaException, Producer

from common import Deadline, confluent_read_all, expect, fail, main


def body():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--timeout-ms", type=int, default=2000)
    ap.add_argument("--check-ms", type=int, default=500)
    a = ap.parse_args()

    conf = {"bootstrap.servers": a.bootstrap, "transactional.id": "hung-txn", "transaction.timeout.ms": a.timeout_ms,
            "message.timeout.ms": a.timeout_ms}
    hung = Producer(conf)
    hung.init_transactions(30)
    hung.begin_transaction()
    delivered = []
    for v in ("h1", "h2"):
        hung.produce(a.topic, value=v.encode(), partition=0, on_delivery=lambda err, msg: delivered.append(err))
    expect(hung.flush(10) == 0 and delivered == [None, None], f"the hung transaction's records were not delivered: {delivered}")
    began = time.monotonic()

    # The coordinator aborts it within the timeout and two checks: until then read_committed stops
    # before h1 (the last stable offset), after it reads to the end without h1, h2.
    bound = (a.timeout_ms + 2 * a.check_ms) / 1000 + 5
    deadline = Deadline(bound, "the hung transaction aborted by its timeout")
    while True:
        records = confluent_read_all(a.bootstrap, a.topic, [0], Deadline(10, "a read_committed pass"), isolation="read_committed")
        values = [r["value"].decode() for r in records]
        expect("h1" not in values and "h2" not in values, f"read_committed shows the hung transaction's records: {values}")
        uncommitted = confluent_read_all(a.bootstrap, a.topic, [0], Deadline(10, "a read_uncommitted pass"))
        # Aborted: the marker follows h1 and h2, and read_committed reads to the same end.
        if len(uncommitted) >= 2 and confluent_end(a.bootstrap, a.topic, "read_committed") == confluent_end(a.bootstrap, a.topic, "read_uncommitted"):
            break
        deadline.check(f"read_committed still held back after {time.monotonic() - began:.1f} s")
        time.sleep(0.2)
    aborted_after = time.monotonic() - began
    expect(aborted_after * 1000 >= a.timeout_ms * 0.9, f"aborted after {aborted_after:.2f} s, before its {a.timeout_ms} ms timeout")

    try:
        hung.commit_transaction(10)
        fail("the hung producer's commit succeeded after the coordinator aborted its transaction")
    except KafkaException as e:
        told = str(e.args[0])

    fresh = Producer(conf)
    fresh.init_transactions(30)
    fresh.begin_transaction()
    fresh.produce(a.topic, value=b"c1", partition=0)
    fresh.commit_transaction(30)
    values = [r["value"].decode() for r in confluent_read_all(a.bootstrap, a.topic, [0], Deadline(30, "reading back"), isolation="read_committed")]
    expect(values == ["c1"], f"read_committed after the new producer's commit: {values}, expected ['c1']")
    print(json.dumps({"aborted_after_s": round(aborted_after, 2), "hung_commit": told}))


def confluent_end(bootstrap, topic, isolation):
    """Partition 0's end offset under `isolation` (the last stable offset for read_committed)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "seedlog-ends", "isolation.level": isolation, "enable.auto.commit": False})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


if __name__ == "__main__":
    main(body)
