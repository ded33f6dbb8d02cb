#!/usr/bin/env python3
"""Cluster metadata through confluent-kafka: optionally create a topic, wait for a state, print it.

Run by `tests/all/real_cluster.rs`. Steps, each bounded by --timeout overall:
1. wait until metadata lists --brokers brokers (a topic with replication factor 3 cannot be
   created before three brokers are registered and unfenced);
2. with --create, create --topic with --partitions and --replication-factor (AdminClient);
3. wait until every partition of --topic has a leader that metadata lists, at least --min-isr
   in-sync replicas, and (with --leader-not X) no partition led by broker X; with
   --controller-not X, until metadata names a listed broker other than X as the controller;
4. print the last metadata as one JSON line on stdout:
   {"elapsed_s": S, "brokers": {"ID": "host:port"}, "controller": ID,
    "partitions": {"P": {"leader": L, "replicas": [...], "isr": [...]}}}
Checking the numbers (replica counts, leaders spread) is the Rust test's job; this script only
waits, so a state that never comes fails here with the last metadata it saw.
"""

import argparse
import json
import sys
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from common import Deadline, expect, fail, main


def snapshot(md, topic):
    """The parts of a confluent ClusterMetadata the test looks at, as plain JSON-able data."""
    out = {
        "brokers": {str(b.id): f"{b.host}:{b.port}" for b in md.brokers.values()},
        "controller": md.controller_id,
        "partitions": {},
        "topic_error": None,
    }
    t = md.topics.get(topic) if topic else None
    if topic and t is None:
        out["topic_error"] = "topic not listed"
    elif t is not None:
        out["topic_error"] = str(t.error) if t.error is not None else None
        for p in t.partitions.values():
            out["partitions"][str(p.id)] = {
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isrs),
                "error": str(p.error) if p.error is not None else None,
            }
    return out


def unmet(snap, args):
    """Why `snap` is not yet the state asked for, or None when it is."""
    if len(snap["brokers"]) != args.brokers:
        return f"{len(snap['brokers'])} brokers listed, waiting for {args.brokers}"
    if args.controller_not is not None and (snap["controller"] == args.controller_not or str(snap["controller"]) not in snap["brokers"]):
        return f"controller {snap['controller']}, waiting for a listed broker other than {args.controller_not}"
    if not args.topic:
        return None
    if snap["topic_error"] is not None:
        return f"topic {args.topic!r}: {snap['topic_error']}"
    if args.partitions and len(snap["partitions"]) != args.partitions:
        return f"{len(snap['partitions'])} partitions listed, waiting for {args.partitions}"
    for p, info in sorted(snap["partitions"].items(), key=lambda kv: int(kv[0])):
        if info["error"] is not None:
            return f"partition {p}: error {info['error']}"
        if str(info["leader"]) not in snap["brokers"]:
            return f"partition {p}: leader {info['leader']} is not a listed broker"
        if len(info["isr"]) < args.min_isr:
            return f"partition {p}: ISR {info['isr']}, waiting for {args.min_isr} members"
        if args.leader_not is not None and info["leader"] == args.leader_not:
            return f"partition {p}: still led by broker {args.leader_not}"
    return None


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--brokers", type=int, default=3, help="wait until metadata lists this many")
    ap.add_argument("--topic")
    ap.add_argument("--create", action="store_true")
    ap.add_argument("--partitions", type=int, default=0, help="with --create; else 0 = any number")
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--min-isr", type=int, default=0)
    ap.add_argument("--leader-not", type=int)
    ap.add_argument("--controller-not", type=int)
    ap.add_argument("--timeout", type=float, default=20)
    args = ap.parse_args()
    expect(not args.create or (args.topic and args.partitions > 0), "--create needs --topic and --partitions")

    start = time.monotonic()
    deadline = Deadline(args.timeout, "cluster metadata")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    brokers_only = argparse.Namespace(**{**vars(args), "topic": None})
    why, snap = "no metadata yet", None

    def poll(want):
        nonlocal why, snap
        while True:
            try:
                # Each call is a fresh Metadata request; a dead broker costs at most this wait.
                md = admin.list_topics(args.topic if want.topic else None, timeout=max(0.5, min(2.0, deadline.left())))
                snap = snapshot(md, want.topic)
                why = unmet(snap, want)
                if why is None:
                    return
            except KafkaException as e:
                why = f"metadata request failed: {e.args[0]}"
            if deadline.expired():
                fail(f"not reached within {args.timeout} s: {why}; last metadata: {json.dumps(snap)}")
            time.sleep(0.1)

    poll(brokers_only)
    if args.create:
        future = admin.create_topics([NewTopic(args.topic, num_partitions=args.partitions,
                                               replication_factor=args.replication_factor)])[args.topic]
        try:
            future.result(timeout=max(1.0, deadline.left()))
        except KafkaException as e:
            fail(f"create_topics({args.topic!r}, {args.partitions} partitions, replication factor "
                 f"{args.replication_factor}) failed: {e.args[0]}")
    poll(args)
    snap["elapsed_s"] = round(time.monotonic() - start, 3)
    print(json.dumps(snap))
    print(f"cluster_topic.py: reached in {snap['elapsed_s']} s", file=sys.stderr)


if __name__ == "__main__":
    main(run)
