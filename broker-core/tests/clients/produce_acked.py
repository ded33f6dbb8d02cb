#!/usr/bin/env python3
"""Produce N records with acks=all (idempotent) and write down every acknowledged one.

The output FILE is JSON: {"topic": T, "acked": [{"partition", "offset", "key", "value"}, ...]},
the records the broker promised to keep. `verify_acked.py` checks them after a restart.

By default the broker is up throughout, so a record that was not acknowledged is an error. With
--until-killed the broker is killed while this script produces: it touches the --started file
at the first acknowledgement, stops sending at the first failed delivery, waits out the rest
(message.timeout.ms is short in this mode), and writes down what was acknowledged before the
kill; failures are expected then, and only an empty acknowledged list is an error.
"""

import argparse
import json
import sys

from confluent_kafka import Producer

from common import check_dense, expect, fail, group_by_partition, main


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--until-killed", action="store_true", help="the broker dies mid-way: failures expected")
    ap.add_argument("--started", help="with --until-killed: file to create at the first acknowledgement")
    args = ap.parse_args()
    message_timeout_ms = 5000 if args.until_killed else 30000

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 2, "message.timeout.ms": message_timeout_ms})
    acked, failed = [], []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(f"{msg.key()!r}: {err}")
            return
        if not acked and args.started:
            open(args.started, "w").close()
        acked.append({"partition": msg.partition(), "offset": msg.offset(),
                      "key": msg.key().decode(), "value": msg.value().decode()})

    for i in range(args.n):
        if failed and args.until_killed:
            break
        while True:
            try:
                producer.produce(args.topic, key=f"acked-{i}", value=f"value-{i}-{'#' * (i % 97)}", on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(message_timeout_ms / 1000 + 15)
    expect(left == 0, f"{left} of {args.n} records neither delivered nor failed after flush")
    if args.until_killed:
        expect(acked, f"no record acknowledged before the broker died; first failure: {failed[:1]}")
        print(f"{len(acked)} acknowledged, {len(failed)} failed (broker killed)", file=sys.stderr)
    else:
        if failed:
            fail(f"{len(failed)} deliveries failed, first: {failed[0]}")
        expect(len(acked) == args.n, f"{len(acked)} acknowledgements for {args.n} records")
    # What a partition acknowledged is a prefix of it: dense from 0 even when the broker died.
    check_dense(group_by_partition(acked), f"{args.topic} acknowledgements")
    with open(args.out, "w") as f:
        json.dump({"topic": args.topic, "acked": acked}, f)


if __name__ == "__main__":
    main(run)
