#!/usr/bin/env python3
"""A produce or request quota throttles one client id and not another (confluent-kafka, KIP-219).

With --kind bytes, the test has set producer_byte_rate=--rate for client id "throttled"
(seedlog configs). Two
confluent-kafka producers write --mib MiB each to TOPIC as fast as they can, "free" first, then
"throttled", each with a throttle_cb recording the broker's throttle times. "free" must hear
none; "throttled" must be told to wait (a throttle of at least 1 s: --mib is over Kafka's
allowance of a first burst, a whole window's worth, 10 s at the quota), and a record it sends
right after must not be delivered before at least a second of that wait has passed (the broker
mutes the connection; the client holds back too).

With --kind requests, the test has set a small request_percentage for "throttled" instead:
each producer sends one record at a time, waiting for each, until the broker tells it to wait
at least 200 ms (the node's time on its requests is over its share), at most --records records.
"free" must never be told; "throttled" must be, and its next record must wait about as long.
Prints one JSON line with each producer's figures.
"""

import argparse
import json
import time

from confluent_kafka import Producer

from common import expect, main


def produce(bootstrap, topic, client_id, total):
    throttles = []
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": "1", "linger.ms": 5,
                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    value = b"q" * 1000
    acked = []
    start = time.monotonic()
    for i in range(total // len(value)):
        while True:
            try:
                p.produce(topic, value=value, on_delivery=lambda err, msg: acked.append(err is None))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(60)
    elapsed = time.monotonic() - start
    expect(left == 0, f"{client_id}: {left} records undelivered after flush(60)")
    # One more record, right after: a throttled client's waits for its throttle to pass.
    then = time.monotonic()
    p.produce(topic, value=b"after", on_delivery=lambda err, msg: acked.append(err is None))
    expect(p.flush(60) == 0, f"{client_id}: the record after was not delivered")
    next_s = time.monotonic() - then
    expect(all(acked), f"{client_id}: {acked.count(False)} deliveries failed")
    return {"client_id": client_id, "records": len(acked), "elapsed_s": round(elapsed, 2), "next_record_s": round(next_s, 2),
            "max_throttle_ms": round(max(throttles, default=0) * 1000)}


def one_at_a_time(bootstrap, topic, client_id, most):
    throttles = []
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": "1", "linger.ms": 0,
                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    sent = 0
    while sent < most and max(throttles, default=0) < 0.2:
        p.produce(topic, value=b"r" * 100)
        expect(p.flush(30) == 0, f"{client_id}: record {sent} was not delivered")
        sent += 1
    told = max(throttles, default=0)
    then = time.monotonic()
    p.produce(topic, value=b"after")
    expect(p.flush(30) == 0, f"{client_id}: the record after was not delivered")
    return {"client_id": client_id, "records": sent + 1, "max_throttle_ms": round(told * 1000),
            "next_record_s": round(time.monotonic() - then, 2)}


def run_requests(args):
    free = one_at_a_time(args.bootstrap, args.topic, "free", args.records)
    throttled = one_at_a_time(args.bootstrap, args.topic, "throttled", args.records)
    print(json.dumps({"free": free, "throttled": throttled}))
    expect(free["max_throttle_ms"] == 0, f"the client id without a quota was throttled: {free}")
    expect(throttled["max_throttle_ms"] >= 200, f"the client id over its request quota was not told to wait: {throttled}")
    expect(throttled["next_record_s"] >= 0.8 * throttled["max_throttle_ms"] / 1000,
           f"the throttled client's next record went through before its throttle passed: {throttled}")


def run(args):
    if args.kind == "requests":
        return run_requests(args)
    total = int(args.mib * 1024 * 1024)
    free = produce(args.bootstrap, args.topic, "free", total)
    throttled = produce(args.bootstrap, args.topic, "throttled", total)
    print(json.dumps({"free": free, "throttled": throttled}))
    expect(free["max_throttle_ms"] == 0, f"the client id without a quota was throttled: {free}")
    expect(throttled["max_throttle_ms"] >= 1000, f"the client id over its quota was not told to wait: {throttled}")
    expect(throttled["next_record_s"] >= 1.0, f"the throttled client's next record went through before its throttle passed: {throttled}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--kind", choices=["bytes", "requests"], default="bytes")
    ap.add_argument("--rate", type=float, help="the throttled client's producer_byte_rate (--kind bytes)")
    ap.add_argument("--records", type=int, default=300, help="most records sent one at a time (--kind requests)")
    ap.add_argument("--mib", type=float, default=1.5)
    args = ap.parse_args()
    main(lambda: run(args))
