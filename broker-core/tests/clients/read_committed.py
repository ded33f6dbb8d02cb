#!/usr/bin/env python3
"""Real consumers read a partition holding committed and aborted transactions and their markers.

The test wrote, to partition 0 of `--topic`, transactional batches ended by commit and abort
markers (WriteTxnMarkers) and plain batches. Reads the partition from the beginning to its end
four ways: confluent-kafka (librdkafka) and kafka-python, each with isolation level
read_committed (the aborted records are dropped by the aborted-transaction list the broker
answers, control records are never shown) and read_uncommitted (every data record, markers
still hidden). Checks each against the values the test expects, in order.
"""

import argparse
import json

from common import Deadline, confluent_read_all, expect, kafka_python_read, main


def confluent(bootstrap, topic, isolation, deadline):
    return [r["value"].decode() for r in confluent_read_all(bootstrap, topic, [0], deadline, isolation=isolation)]


def kafka_python(bootstrap, topic, isolation, end, deadline):
    return kafka_python_read(bootstrap, topic, isolation, end, deadline)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--end", type=int, required=True, help="the partition's log end offset")
    ap.add_argument("--committed", required=True, help="JSON list: the values read_committed must give")
    ap.add_argument("--all", required=True, help="JSON list: the values read_uncommitted must give")
    args = ap.parse_args()
    want = {"read_committed": json.loads(args.committed), "read_uncommitted": json.loads(args.all)}
    for isolation, values in want.items():
        got_c = confluent(args.bootstrap, args.topic, isolation, Deadline(60, f"confluent {isolation}"))
        got_k = kafka_python(args.bootstrap, args.topic, isolation, args.end, Deadline(60, f"kafka-python {isolation}"))
        expect(got_c == values, f"confluent-kafka {isolation}: {got_c}, expected {values} (kafka-python: {got_k})")
        expect(got_k == values, f"kafka-python {isolation}: {got_k}, expected {values}")
    print(f"read_committed and read_uncommitted agree with the transactions' outcomes ({len(want['read_committed'])} and {len(want['read_uncommitted'])} records)")


if __name__ == "__main__":
    main(run)
