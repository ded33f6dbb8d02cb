#!/usr/bin/env python3
"""A three-broker cluster whose every listener is SASL_SSL (SASL_PLAINTEXT without --ca), its
brokers and controllers authenticating to each other with SCRAM over TLS: confluent-kafka, as the bootstrapped admin user,
creates a topic replicated on all three (min.insync.replicas 2), produces to it with
acks=all, commits one transaction and aborts another across both partitions (the coordinator's
markers and the leaders' verifications travel between brokers over SASL), and reads back with
read_committed: every acknowledged and committed record, nothing aborted. With
--expect-brokers and --internal, Metadata on the client listener names exactly the expected
endpoints, and on the INTERNAL listener the internal ones.
"""

import argparse

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from common import Deadline, expect, fail, main

auth = {"sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": "admin-secret"}


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--ca", help="the CA's certificate (PEM): connect over SASL_SSL")
    ap.add_argument("--expect-brokers", help="host:port,... every broker's endpoint on the client listener")
    ap.add_argument("--internal", help="host:port,... every broker's endpoint on the INTERNAL listener")
    args = ap.parse_args()
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": args.ca} if args.ca else {"security.protocol": "SASL_PLAINTEXT"}
    config = {"bootstrap.servers": args.bootstrap, **auth, **tls}
    admin = AdminClient(config)
    deadline = Deadline(60, "three brokers in metadata")
    while len(admin.list_topics(timeout=10).brokers) < 3:
        deadline.check("waiting for the three brokers")
    if args.expect_brokers:
        seen = sorted(f"{b.host}:{b.port}" for b in admin.list_topics(timeout=10).brokers.values())
        expect(seen == sorted(args.expect_brokers.split(",")), f"Metadata on the client listener: {seen}, expected {args.expect_brokers}")
    if args.internal:
        inside = AdminClient({**config, "bootstrap.servers": args.internal.split(",")[0]})
        seen = sorted(f"{b.host}:{b.port}" for b in inside.list_topics(timeout=10).brokers.values())
        expect(seen == sorted(args.internal.split(",")), f"Metadata on the INTERNAL listener: {seen}, expected {args.internal}")
    admin.create_topics([NewTopic(args.topic, 2, 3, config={"min.insync.replicas": "2"})], request_timeout=30)[args.topic].result(timeout=30)
    deadline = Deadline(60, "every partition led and fully in sync")
    while True:
        parts = admin.list_topics(args.topic, timeout=10).topics[args.topic].partitions
        if len(parts) == 2 and all(p.leader >= 0 and len(p.isrs) == 3 for p in parts.values()):
            break
        deadline.check(f"partitions {[(p.id, p.leader, p.isrs) for p in parts.values()]}")
    p = Producer({**config, "acks": "all"})
    acked, errors = [], []
    for i in range(200):
        p.produce(args.topic, value=f"plain-{i}", partition=i % 2, on_delivery=lambda err, msg: (errors if err else acked).append(err or msg.value().decode()))
    p.flush(60)
    expect(not errors and len(acked) == 200, f"acks=all: {len(acked)} acknowledged, errors {errors[:3]}")
    t = Producer({**config, "transactional.id": "sasl-cluster-txn"})
    t.init_transactions(60)
    for outcome in ["committed", "aborted"]:
        t.begin_transaction()
        for i in range(20):
            t.produce(args.topic, value=f"{outcome}-{i}", partition=i % 2)
        t.flush(60)
        if outcome == "committed":
            t.commit_transaction(60)
        else:
            t.abort_transaction(60)
    c = Consumer({**config, "group.id": "sasl-cluster-reader", "enable.auto.commit": False, "isolation.level": "read_committed", "enable.partition.eof": True})
    c.assign([TopicPartition(args.topic, part, 0) for part in (0, 1)])
    got, at_end, deadline = [], set(), Deadline(60, "reading back with read_committed")
    while at_end != {0, 1}:
        deadline.check(f"read {len(got)} so far")
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                at_end.add(m.partition())
                continue
            fail(f"consumer: {m.error()}")
        got.append(m.value().decode())
    c.close()
    want = set(acked) | {f"committed-{i}" for i in range(20)}
    expect(set(got) == want and len(got) == len(want), f"read_committed read {len(got)} records; missing {sorted(want - set(got))[:5]}, unexpected {sorted(set(got) - want)[:5]}")
    listeners = ", each listener's own endpoints in Metadata" if args.internal else ""
    print(f"a {tls['security.protocol']} cluster of three{listeners}: {len(acked)} acks=all records and a committed transaction read back, the aborted one not")


if __name__ == "__main__":
    main(run)
