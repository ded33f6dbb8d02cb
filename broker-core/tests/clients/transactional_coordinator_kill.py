#!/usr/bin/env python3
"""A transactional producer rides out the SIGKILL of its transaction coordinator mid-commit.

Run by `tests/all/real_cluster/transactions.rs` against a three-broker cluster whose
`__transaction_state` has three partitions of three replicas each. Steps, each with a deadline:

1. A throwaway producer's init_transactions makes the brokers create `__transaction_state`;
   every partition must have --replicas replicas, all in sync. The transactional id is the first
   of `<--id>-0`, `<--id>-1`, ... whose coordinator (the leader of its partition,
   `abs(javaHash(id)) % partitions`, as Kafka places it) is not broker --avoid (the controller,
   which the test must not kill).
2. One confluent-kafka transactional producer runs transactions back to back, each one record on
   each of --topic's two partitions (values `t<n>-p<p>`), every fifth aborted. After
   --kill-after transactions it sends a large transaction (--big records, not flushed), writes
   --ready as JSON {"txn_id", "coordinator"} and calls commit_transaction at once: the test
   SIGKILLs the coordinator while that commit (flush, EndTxn, markers) is under way.
3. Once --killed exists it keeps going until --after-kill transactions commit, within
   --recovery-s-max. A transaction's outcome is committed (commit_transaction returned),
   aborted (abort_transaction returned, or the producer had to be replaced: a new producer's
   init_transactions aborts what the old one left open) or unknown (commit_transaction failed
   in a way that does not say).
4. read_committed over both partitions must show every record of each committed transaction,
   none of an aborted one, and each unknown one whole or not at all.

Prints one JSON line: the id, the coordinator killed, transactions committed and aborted before
and after the kill, how the big transaction ended and how long its commit took (the failover
included when the kill landed in it), seconds to the first commit after the kill.
"""

import argparse
import json
import os
import time

from confluent_kafka import KafkaException, Producer

from common import Deadline, confluent_read_all, expect, fail, main

state_topic = "__transaction_state"


def java_hash(s):
    """Java's String.hashCode of an id of BMP characters (one UTF-16 unit each)."""
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def partition_for(txn_id, partitions):
    # Kafka's Utils.abs(hashCode) % partitions: the sign bit dropped.
    return (java_hash(txn_id) & 0x7FFFFFFF) % partitions


def producer(bootstrap, txn_id):
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 60000,
                     "message.timeout.ms": 60000, "linger.ms": 5})


def state_leaders(p, replicas, deadline):
    """{partition: leader} of `__transaction_state` once every partition is fully in sync."""
    while True:
        deadline.check(f"{state_topic} with {replicas} in-sync replicas per partition")
        try:
            t = p.list_topics(state_topic, timeout=5).topics.get(state_topic)
        except KafkaException:
            t = None
        if t is not None and t.error is None and t.partitions and all(len(x.isrs) == replicas and x.leader >= 0 for x in t.partitions.values()):
            return {n: x.leader for n, x in t.partitions.items()}
        time.sleep(0.2)


def body():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--avoid", type=int, required=True)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--kill-after", type=int, default=20)
    ap.add_argument("--big", type=int, default=5000)
    ap.add_argument("--after-kill", type=int, default=10)
    ap.add_argument("--recovery-s-max", type=float, default=30)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--killed", required=True)
    a = ap.parse_args()

    setup = Deadline(60, "creating the transaction state topic")
    probe = producer(a.bootstrap, f"{a.id}-probe")
    probe.init_transactions(60)
    leaders = state_leaders(probe, a.replicas, setup)
    txn_id = next(f"{a.id}-{i}" for i in range(1000) if leaders[partition_for(f"{a.id}-{i}", len(leaders))] != a.avoid)
    coordinator = leaders[partition_for(txn_id, len(leaders))]

    txns = []  # {"n", "values", "outcome", "after_kill"}
    state = {"p": producer(a.bootstrap, txn_id), "killed": False}
    state["p"].init_transactions(60)

    def send(n, count):
        values = [f"t{n}-p{i % 2}-{i}" for i in range(count)]
        for i, v in enumerate(values):
            while True:
                try:
                    state["p"].produce(a.topic, value=v.encode(), partition=i % 2)
                    break
                except BufferError:
                    state["p"].poll(0.05)
        return values

    def end(txn, commit):
        """Ends `txn`; its outcome is what the producer was told."""
        p = state["p"]
        try:
            if commit:
                p.commit_transaction(60)
                txn["outcome"] = "committed"
            else:
                p.abort_transaction(60)
                txn["outcome"] = "aborted"
            return
        except KafkaException as e:
            err = e.args[0]
            txn["error"] = str(err)
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(60)
                    txn["outcome"] = "aborted"
                    return
                except KafkaException as e2:
                    txn["error"] += f"; abort: {e2.args[0]}"
        # Fatal or unsure: a new producer of the id aborts whatever the old one left open.
        txn["outcome"] = "unknown" if commit else "aborted"
        state["p"] = producer(a.bootstrap, txn_id)
        state["p"].init_transactions(60)

    n, big = 0, None
    run = Deadline(120, "transactions before the kill")
    killed_seen, first_commit_after = None, None
    while True:
        if killed_seen is None and big is not None and os.path.exists(a.killed):
            killed_seen = time.monotonic()
            state["killed"] = True
        after = [t for t in txns if t["after_kill"] and t["outcome"] == "committed"]
        if killed_seen is not None and len(after) >= a.after_kill:
            break
        if killed_seen is not None:
            expect(time.monotonic() - killed_seen <= a.recovery_s_max,
                   f"only {len(after)} of {a.after_kill} transactions committed within {a.recovery_s_max} s of the kill: "
                   f"{[t for t in txns if t['after_kill']]}")
        elif big is not None:
            run.check(f"waiting for {a.killed}")
        else:
            run.check(f"{n} transactions")
        state["p"].begin_transaction()
        commit = n % 5 != 4
        if n == a.kill_after and big is None:
            big = {"n": n, "values": send(n, a.big), "outcome": None, "after_kill": False}
            with open(a.ready + ".tmp", "w") as f:
                json.dump({"txn_id": txn_id, "coordinator": coordinator}, f)
            os.replace(a.ready + ".tmp", a.ready)
            began = time.monotonic()
            end(big, True)
            big["seconds"] = time.monotonic() - began
            txns.append(big)
        else:
            txn = {"n": n, "values": send(n, 2), "outcome": None, "after_kill": killed_seen is not None}
            end(txn, commit)
            txns.append(txn)
            if txn["after_kill"] and txn["outcome"] == "committed" and first_commit_after is None:
                first_commit_after = time.monotonic() - killed_seen
        n += 1
        if big is not None and killed_seen is None:
            # The test kills right after --ready; wait for its word before going on.
            while not os.path.exists(a.killed):
                run.check(f"waiting for {a.killed}")
                time.sleep(0.01)
    state["p"].flush(30)

    read = Deadline(60, "reading back with read_committed")
    records = confluent_read_all(a.bootstrap, a.topic, [0, 1], read, isolation="read_committed")
    seen = {r["value"].decode() for r in records}
    for t in txns:
        there = [v for v in t["values"] if v in seen]
        if t["outcome"] == "committed":
            expect(len(there) == len(t["values"]), f"transaction {t['n']} was committed; {len(there)} of its {len(t['values'])} records are visible: {t}")
        elif t["outcome"] == "aborted":
            expect(not there, f"transaction {t['n']} was aborted; {len(there)} of its records are visible")
        else:
            expect(len(there) in (0, len(t["values"])), f"transaction {t['n']} (outcome unknown) is torn: {len(there)} of {len(t['values'])} visible")
    expect(len(seen) == len(records), f"read_committed returned duplicates: {len(records)} records, {len(seen)} distinct")
    count = lambda outcome, after_kill: sum(1 for t in txns if t["outcome"] == outcome and t["after_kill"] == after_kill)
    print(json.dumps({
        "txn_id": txn_id, "coordinator": coordinator, "big": {"records": len(big["values"]), "outcome": big["outcome"], "error": big.get("error"), "commit_s": round(big["seconds"], 3)},
        "before_kill": {"committed": count("committed", False), "aborted": count("aborted", False)},
        "after_kill": {"committed": count("committed", True), "aborted": count("aborted", True), "unknown": count("unknown", True)},
        "first_commit_after_kill_s": first_commit_after, "records_visible": len(seen),
    }))


if __name__ == "__main__":
    main(body)
