#!/usr/bin/env python3
"""After a failover: every acknowledged record is in the log at the offset its report gave.

Reads every partition of --topic from the beginning to its high watermark (assign(), no group;
librdkafka fetches from whichever broker metadata names leader, so from the new leaders) and
compares with the --acked file `cluster_failover_produce.py` wrote: each acknowledged record
must be at its offset with its key and value. With --no-duplicates a key may appear at most once
in the whole topic: an idempotent producer's retries after a leader change must not write a
record twice. Records whose delivery failed may or may not be there (both are allowed).
"""

import argparse
import json
import sys

from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, confluent_read_all, expect, fail, main


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--acked", required=True)
    ap.add_argument("--no-duplicates", action="store_true")
    args = ap.parse_args()
    with open(args.acked) as f:
        saved = json.load(f)
    expect(saved["topic"] == args.topic, f"{args.acked} is for topic {saved['topic']!r}, not {args.topic!r}")
    acked = saved["acked"]
    expect(acked, f"{args.acked} lists no acknowledged records")

    deadline = Deadline(60, f"{args.topic}: read back after failover")
    partitions = confluent_partitions(AdminClient({"bootstrap.servers": args.bootstrap}), args.topic, deadline)
    records = confluent_read_all(args.bootstrap, args.topic, partitions, deadline)
    got = {(r["partition"], r["offset"]): r for r in records}
    log_end = {p: 1 + max([o for (q, o) in got if q == p], default=-1) for p in partitions}

    missing, wrong = [], []
    for a in acked:
        r = got.get((a["partition"], a["offset"]))
        where = f"partition {a['partition']} offset {a['offset']} ({a['key']})"
        if r is None:
            missing.append(where)
        elif (r["key"], r["value"]) != (a["key"].encode(), a["value"].encode()):
            wrong.append(f"{where}: read {r['key']!r}={r['value'][:30]!r}")
    if missing or wrong:
        fail(f"{len(missing)} of {len(acked)} acknowledged records missing (first: {missing[:3]}), "
             f"{len(wrong)} changed (first: {wrong[:3]}); log ends now {log_end}")

    places = {}
    for r in records:
        places.setdefault(r["key"], []).append((r["partition"], r["offset"]))
    doubled = {k: v for k, v in places.items() if len(v) > 1}
    failed_keys = {f["key"].encode() for f in saved["failed"]}
    failed_present = sum(1 for k in failed_keys if k in places)
    summary = (f"{len(acked)} acknowledged records all read back; {len(records)} records in the topic, "
               f"log ends {log_end}; {len(failed_keys)} failed deliveries, {failed_present} of them in the log; "
               f"{len(doubled)} keys written more than once")
    print(summary, file=sys.stderr)
    if args.no_duplicates and doubled:
        first = sorted(doubled.items())[:5]
        fail(f"{len(doubled)} keys appear more than once in {args.topic!r} (idempotent producer): "
             + "; ".join(f"{k.decode()} at {v}" for k, v in first))


if __name__ == "__main__":
    main(run)
