#!/usr/bin/env python3
"""The client side of scripts/bench-transactions.sh, with confluent-kafka.

    bench_transactions.py run --bootstrap HOST:PORT --n N --txn T
        on two fresh one-partition topics: N records (100 bytes) produced idempotently, then N
        in transactions of T records each committed; then the transactional topic read to its
        end with read_uncommitted and with read_committed. One JSON line: records/s of each,
        transactions/s, and the read rates.
    bench_transactions.py summarize FILE
        medians [min-max] of the runs' figures.
"""

import argparse
import json
import statistics
import sys
import time

VALUE = b"x" * 100


def topic(bootstrap, name):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def produce(bootstrap, name, n, txn):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, "queue.buffering.max.messages": 1000000}
    if txn:
        conf["transactional.id"] = f"bench-{name}"
    p = Producer(conf)
    failed = []
    report = lambda err, _msg: err is not None and failed.append(err)
    if txn:
        p.init_transactions(30)
    start = time.monotonic()
    sent = 0
    while sent < n:
        count = min(txn or n, n - sent)
        if txn:
            p.begin_transaction()
        for _ in range(count):
            while True:
                try:
                    p.produce(name, VALUE, partition=0, on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.01)
            p.poll(0)
        if txn:
            p.commit_transaction(60)
        sent += count
    if p.flush(60) != 0 or failed:
        raise SystemExit(f"{name}: {len(failed)} records failed: {failed[:3]}")
    return time.monotonic() - start


def consume(bootstrap, name, isolation, n):
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{isolation}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(name, 0, OFFSET_BEGINNING)])
    start, got = time.monotonic(), 0
    deadline = start + 120
    while time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got += 1
            elif m.error().code() == KafkaError._PARTITION_EOF and got >= n:
                c.close()
                return time.monotonic() - start
    c.close()
    raise SystemExit(f"{name} {isolation}: {got} of {n} records in 120 s")


def run(a):
    topic(a.bootstrap, "idem")
    topic(a.bootstrap, "txn")
    idem = produce(a.bootstrap, "idem", a.n, 0)
    txn = produce(a.bootstrap, "txn", a.n, a.txn)
    unc = consume(a.bootstrap, "txn", "read_uncommitted", a.n)
    com = consume(a.bootstrap, "txn", "read_committed", a.n)
    print(json.dumps({"n": a.n, "txn_records": a.txn, "idempotent_records_per_s": round(a.n / idem),
                      "transactional_records_per_s": round(a.n / txn), "transactions_per_s": round(a.n / a.txn / txn, 1),
                      "read_uncommitted_records_per_s": round(a.n / unc), "read_committed_records_per_s": round(a.n / com)}))


def summarize(a):
    runs = [json.loads(l) for l in open(a.file) if l.strip()]
    for key in ["idempotent_records_per_s", "transactional_records_per_s", "transactions_per_s",
                "read_uncommitted_records_per_s", "read_committed_records_per_s"]:
        xs = [r[key] for r in runs]
        print(f"{key:34} {statistics.median(xs):>10} [{min(xs)}-{max(xs)}]")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--bootstrap", required=True)
    r.add_argument("--n", type=int, required=True)
    r.add_argument("--txn", type=int, required=True)
    s = sub.add_parser("summarize")
    s.add_argument("file")
    a = ap.parse_args()
    {"run": run, "summarize": summarize}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
