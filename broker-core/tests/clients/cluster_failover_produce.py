#!/usr/bin/env python3
"""Produce N records at a steady rate through a leader failover, writing down every delivery report.

confluent-kafka, acks=all, enable.idempotence, message.timeout.ms long enough (30 s) for the
client to ride out a leader's death: it retries on the new leader once metadata names one.
Paced at --rate records/s so the run spans the kill. Touches --started once --started-after
records are acknowledged (the test then SIGKILLs a leader and creates --killed); an
acknowledgement that arrives once --killed exists counts as "after the kill".

Writes --out as JSON: {"topic", "acked": [{"partition", "offset", "key", "value"}],
"failed": [{"key", "error"}], "acked_after_kill": K, "killed_seen": bool}. Exit 0 as long as
every record got a delivery report (success or failure): which failures are acceptable is the
test's call. `cluster_verify_acked.py` then reads everything back.
"""

import argparse
import json
import os
import sys
import time

from confluent_kafka import Producer

from common import expect, main


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rate", type=float, default=2000, help="records per second")
    ap.add_argument("--started", required=True)
    ap.add_argument("--started-after", type=int, default=1000)
    ap.add_argument("--killed", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 30000})
    acked, failed = [], []
    state = {"after_kill": 0, "killed": False}

    def on_delivery(err, msg):
        if not state["killed"] and os.path.exists(args.killed):
            state["killed"] = True
        if err is not None:
            failed.append({"key": msg.key().decode(), "error": str(err)})
            return
        acked.append({"partition": msg.partition(), "offset": msg.offset(),
                      "key": msg.key().decode(), "value": msg.value().decode()})
        if state["killed"]:
            state["after_kill"] += 1
        if len(acked) == args.started_after:
            open(args.started, "w").close()

    start = time.monotonic()
    for i in range(args.n):
        # Pacing: record i is not sent before i / rate seconds into the run.
        ahead = i / args.rate - (time.monotonic() - start)
        if ahead > 0:
            producer.poll(ahead)
        while True:
            try:
                producer.produce(args.topic, key=f"fo-{i:06d}", value=f"failover-{i:06d}|{'f' * (i % 53)}",
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(45)
    expect(left == 0, f"{left} of {args.n} records neither delivered nor failed after flush(45 s)")
    expect(len(acked) + len(failed) == args.n,
           f"{len(acked)} acknowledged + {len(failed)} failed delivery reports for {args.n} records")
    with open(args.out, "w") as f:
        json.dump({"topic": args.topic, "acked": acked, "failed": failed,
                   "acked_after_kill": state["after_kill"], "killed_seen": state["killed"]}, f)
    errors = sorted({f["error"] for f in failed})
    print(f"{len(acked)} acknowledged ({state['after_kill']} after the kill), {len(failed)} failed"
          f"{' with ' + '; '.join(errors[:3]) if errors else ''}, in {time.monotonic() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main(run)
