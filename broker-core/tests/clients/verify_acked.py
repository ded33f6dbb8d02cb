#!/usr/bin/env python3
"""Check that every record `produce_acked.py` saw acknowledged is still there, at its offset.

Reads each partition named in the ACKED file from the beginning to its end and compares key and
value at every acknowledged offset; the high watermark must cover the highest acknowledged
offset. With --then-produce K, the restarted broker must also take K more idempotent records
(a new producer id) at offsets continuing the old log end, and serve them back.
"""

import argparse
import json

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, confluent_read_all, expect, fail, group_by_partition, main


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--acked", required=True)
    ap.add_argument("--then-produce", type=int, default=0)
    args = ap.parse_args()
    with open(args.acked) as f:
        saved = json.load(f)
    expect(saved["topic"] == args.topic, f"{args.acked} is for topic {saved['topic']!r}, not {args.topic!r}")
    acked = group_by_partition(saved["acked"])
    expect(acked, f"{args.acked} lists no acknowledged records")

    deadline = Deadline(60, f"{args.topic}: verify acknowledged records")
    partitions = confluent_partitions(AdminClient({"bootstrap.servers": args.bootstrap}), args.topic, deadline)
    expect(set(acked) <= set(partitions),
           f"acknowledged records in partitions {sorted(acked)}, metadata lists only {partitions}")
    got = {(r["partition"], r["offset"]): r for r in confluent_read_all(args.bootstrap, args.topic, partitions, deadline)}
    log_end = {p: 1 + max([o for (q, o) in got if q == p], default=-1) for p in partitions}

    missing, wrong = [], []
    for p, rs in sorted(acked.items()):
        for a in rs:
            r = got.get((p, a["offset"]))
            if r is None:
                missing.append(f"partition {p} offset {a['offset']} ({a['key']})")
            elif (r["key"], r["value"]) != (a["key"].encode(), a["value"].encode()):
                wrong.append(f"partition {p} offset {a['offset']}: read {r['key']!r}={r['value'][:40]!r}, "
                             f"acknowledged {a['key']!r}={a['value'][:40]!r}")
    total = sum(len(rs) for rs in acked.values())
    if missing or wrong:
        fail(f"{len(missing)} of {total} acknowledged records missing (first: {missing[:3]}), "
             f"{len(wrong)} changed (first: {wrong[:3]}); log ends now {log_end}")

    if args.then_produce:
        producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 30000})
        reports = []
        for i in range(args.then_produce):
            producer.produce(args.topic, key=f"after-{i}", value=f"after-restart-{i}",
                             on_delivery=lambda err, msg: reports.append((err, msg)))
        expect(producer.flush(45) == 0, "records produced after the restart not delivered within 45 s")
        new = []
        for err, msg in reports:
            if err is not None:
                fail(f"produce after restart: {msg.key()!r}: {err}")
            new.append({"partition": msg.partition(), "offset": msg.offset(), "key": msg.key(), "value": msg.value()})
        for p, rs in group_by_partition(new).items():
            offsets = [r["offset"] for r in rs]
            want = list(range(log_end[p], log_end[p] + len(rs)))
            expect(offsets == want, f"after restart, partition {p} gave offsets {offsets[:5]}..., "
                                    f"expected to continue from the log end {log_end[p]}")
        start = {p: log_end[p] for p in partitions}
        again = {(r["partition"], r["offset"]): r
                 for r in confluent_read_all(args.bootstrap, args.topic, partitions, deadline, start=start)}
        for r in new:
            g = again.get((r["partition"], r["offset"]))
            expect(g is not None and (g["key"], g["value"]) == (r["key"], r["value"]),
                   f"record produced after restart at partition {r['partition']} offset {r['offset']} "
                   f"read back as {g and (g['key'], g['value'])}")


if __name__ == "__main__":
    main(run)
