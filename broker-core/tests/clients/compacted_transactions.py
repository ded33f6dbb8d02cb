#!/usr/bin/env python3
"""Transactions in a compacted topic, end to end with confluent-kafka's transactional producer.

Creates `--topic` (cleanup.policy=compact, small segments, delete.retention.ms=0 so that a
marker the cleaner found nothing left of goes at the next pass), then runs `--rounds`
transactions of one update of each of ten keys, aborting every third. Meanwhile the broker's
cleaner removes superseded and aborted records and then the markers of transactions nothing is
left of. Reads the partition back with read_committed, by confluent-kafka and kafka-python,
until compaction has brought it down to a quarter of what was written: every key's value is
its last committed one at the offset its send reported, no aborted value is ever read, and
offsets only increase.
"""

import argparse
import time

from confluent_kafka import Producer

from common import Deadline, confluent_read_all, expect, kafka_python_read, main
from compacted_topic import create

keys = 10


def produce(bootstrap, topic, rounds):
    """(each key's last committed (offset, value), every aborted value)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-producer", "linger.ms": 5})
    p.init_transactions(30)
    latest, aborted, errors = {}, set(), []
    for r in range(rounds):
        sent = {}

        def delivered(err, msg):
            if err is not None:
                errors.append(err)
            else:
                sent[msg.key().decode()] = (msg.offset(), msg.value().decode())

        p.begin_transaction()
        for k in range(keys):
            p.produce(topic, key=f"key-{k:02d}", value=f"round-{r}-key-{k}-" + "." * 200, on_delivery=delivered)
        p.flush(30)
        if r % 3 == 2:
            p.abort_transaction(30)
            aborted.update(v for _, v in sent.values())
        else:
            p.commit_transaction(30)
            latest.update(sent)
        expect(not errors, f"round {r}: sends failed: {errors[:3]}")
        # Time for the cleaner (its backoff is short) between transactions.
        time.sleep(0.05)
    return latest, aborted


def check(who, records, latest, aborted):
    offsets = [o for o, _, _ in records]
    expect(offsets == sorted(set(offsets)), f"{who}: offsets not increasing: {offsets[:20]}")
    bad = [(o, v[:20]) for o, _, v in records if v in aborted]
    expect(not bad, f"{who}: read_committed read aborted values: {bad[:5]}")
    last = {k: (o, v) for o, k, v in records}
    expect(last == latest, f"{who}: last values {sorted((k, o) for k, (o, _) in last.items())}, "
                           f"expected {sorted((k, o) for k, (o, _) in latest.items())}")


def read_confluent(bootstrap, topic):
    got = confluent_read_all(bootstrap, topic, [0], Deadline(30, "confluent-kafka read_committed"), isolation="read_committed")
    return [(r["offset"], r["key"].decode(), r["value"].decode()) for r in got]


def read_kafka_python(bootstrap, topic, end):
    return kafka_python_read(bootstrap, topic, "read_committed", end, Deadline(30, "kafka-python read_committed"),
                             record=lambda r: (r.offset, r.key.decode(), r.value.decode()))


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    create(args.bootstrap, args.topic)
    latest, aborted = produce(args.bootstrap, args.topic, args.rounds)
    written = args.rounds * keys
    deadline = Deadline(60, "compaction bringing the partition down to a quarter of what was written")
    while True:
        records = read_confluent(args.bootstrap, args.topic)
        check("confluent-kafka", records, latest, aborted)
        if len(records) * 4 <= written:
            break
        deadline.check(f"{len(records)} of {written} records still read")
        time.sleep(1)
    end = max(o for o, _ in latest.values()) + 1
    check("kafka-python", read_kafka_python(args.bootstrap, args.topic, end), latest, aborted)
    print(f"{args.rounds} transactions ({len(aborted)} aborted records) compacted to {len(records)} of {written} "
          f"records; both clients read each key's last committed value and no aborted one")


if __name__ == "__main__":
    main(run)
