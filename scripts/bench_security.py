#!/usr/bin/env python3
"""The client side of scripts/bench-security.sh, with confluent-kafka.

    bench_security.py run --bootstrap HOST:PORT --protocol PLAINTEXT|SASL_SSL --ca CA.pem --pid PID --n N
        on a fresh one-partition topic: N records (100 bytes) produced with acks=1, then read
        back from offset 0. One JSON line: records/s and the broker's CPU-seconds of each phase.
    bench_security.py summarize FILE
        medians [min-max] per protocol, and SASL_SSL's figures against PLAINTEXT's.
"""

import argparse
import json
import os
import statistics
import sys
import time

VALUE = b"x" * 100


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def security(protocol, ca):
    if protocol == "PLAINTEXT":
        return {}
    return {"security.protocol": protocol, "ssl.ca.location": ca, "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "admin", "sasl.password": "admin-secret"}


def run(args):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    base = {"bootstrap.servers": args.bootstrap, **security(args.protocol, args.ca)}
    name = "bench-security"
    admin = AdminClient(base)
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    p = Producer({**base, "acks": 1, "linger.ms": 5, "queue.buffering.max.messages": 1000000})
    failed = []
    cpu0, start = cpu_seconds(args.pid), time.monotonic()
    for _ in range(args.n):
        while True:
            try:
                p.produce(name, VALUE, partition=0, on_delivery=lambda err, _m: err is not None and failed.append(err))
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    produce_s, produce_cpu = time.monotonic() - start, cpu_seconds(args.pid) - cpu0
    if failed:
        sys.exit(f"{len(failed)} records failed: {failed[:3]}")
    c = Consumer({**base, "group.id": "bench-security", "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(name, 0, 0)])
    got = 0
    cpu0, start = cpu_seconds(args.pid), time.monotonic()
    while got < args.n:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got += 1
        if time.monotonic() - start > 300:
            sys.exit(f"consumed {got} of {args.n} in 300 s")
    consume_s, consume_cpu = time.monotonic() - start, cpu_seconds(args.pid) - cpu0
    c.close()
    print(json.dumps({"protocol": args.protocol, "n": args.n,
                      "produce_rps": round(args.n / produce_s), "produce_broker_cpu_s": round(produce_cpu, 2),
                      "consume_rps": round(args.n / consume_s), "consume_broker_cpu_s": round(consume_cpu, 2)}))


def summarize(args):
    rows = [json.loads(line) for line in open(args.file) if line.strip()]
    keys = ["produce_rps", "produce_broker_cpu_s", "consume_rps", "consume_broker_cpu_s"]
    med = {}
    for protocol in ["PLAINTEXT", "SASL_SSL"]:
        mine = [r for r in rows if r["protocol"] == protocol]
        if not mine:
            continue
        med[protocol] = {k: statistics.median(r[k] for r in mine) for k in keys}
        print(f"{protocol:10} " + "  ".join(f"{k} {med[protocol][k]:g} [{min(r[k] for r in mine):g}-{max(r[k] for r in mine):g}]" for k in keys))
    if len(med) == 2:
        print("SASL_SSL / PLAINTEXT: " + "  ".join(f"{k} {med['SASL_SSL'][k] / med['PLAINTEXT'][k]:.2f}x" for k in keys if med["PLAINTEXT"][k]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--bootstrap", required=True)
    r.add_argument("--protocol", choices=["PLAINTEXT", "SASL_SSL"], required=True)
    r.add_argument("--ca", required=True)
    r.add_argument("--pid", type=int, required=True)
    r.add_argument("--n", type=int, required=True)
    s = sub.add_parser("summarize")
    s.add_argument("file")
    args = ap.parse_args()
    (run if args.cmd == "run" else summarize)(args)


if __name__ == "__main__":
    main()
