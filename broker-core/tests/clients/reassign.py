#!/usr/bin/env python3
"""kafka-python's admin moves a partition to other brokers (AlterPartitionReassignments).

Asks for TOPIC-PARTITION to move to --to; the answer must accept it. Then polls
ListPartitionReassignments until the partition is no longer listed (the move completed), and
metadata (a fresh admin's describe_topics) until it names exactly --to as the replicas, with
every one of them in sync. Along the way, what operators get wrong must be refused with Kafka's
errors: a target naming an unregistered broker (InvalidReplicationAssignmentError), a target naming
a broker twice (likewise), cancelling when nothing is in progress
(NoReassignmentInProgressError), a partition that does not exist (UnknownTopicOrPartitionError).
Prints one JSON line: {"seen_in_progress": bool, "replicas": [...], "isr": [...], "leader": L,
"elapsed_s": S}.
"""

import argparse
import json
import time

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError, UnknownTopicOrPartitionError

from common import Deadline, expect, main


def describe(admin, topic, partition):
    """(replicas, isr, leader) of the partition as metadata names them, or None."""
    for t in admin.describe_topics([topic]):
        for p in t.get("partitions", []):
            if p["partition_index"] == partition:
                return list(p["replica_nodes"]), list(p["isr_nodes"]), p["leader_id"]
    return None


def run(args):
    target = [int(b) for b in args.to.split(",")]
    tp = TopicPartition(args.topic, args.partition)
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=15000)
    try:
        refused = admin.alter_partition_reassignments({tp: target + [97]})
        expect(refused.get(tp) is InvalidReplicationAssignmentError, f"a target naming broker 97 got {refused}")
        refused = admin.alter_partition_reassignments({tp: [target[0], target[0]]})
        expect(refused.get(tp) is InvalidReplicationAssignmentError, f"a target naming a broker twice got {refused}")
        refused = admin.alter_partition_reassignments({tp: None})
        expect(refused.get(tp) is NoReassignmentInProgressError, f"a cancel with nothing in progress got {refused}")
        missing = TopicPartition(args.topic, 99)
        refused = admin.alter_partition_reassignments({missing: target})
        expect(refused.get(missing) is UnknownTopicOrPartitionError, f"a partition that does not exist got {refused}")

        start = time.monotonic()
        accepted = admin.alter_partition_reassignments({tp: target})
        expect(accepted.get(tp) is None, f"the reassignment to {target} was not accepted: {accepted}")
        seen_in_progress = False
        deadline = Deadline(args.timeout, f"{tp} to leave ListPartitionReassignments")
        while True:
            ongoing = admin.list_partition_reassignments()
            if tp not in ongoing:
                break
            seen_in_progress = True
            now = ongoing[tp]
            expect(now["replicas"][:len(target)] == target, f"in progress, the replicas {now['replicas']} do not start with the target {target}")
            deadline.check(f"still listed: {now}")
            time.sleep(0.1)
        deadline = Deadline(args.timeout, f"metadata to name {target} as the replicas of {tp}, all in sync")
        while True:
            state = describe(admin, args.topic, args.partition)
            if state and state[0] == target and sorted(state[1]) == sorted(target) and state[2] in target:
                break
            deadline.check(f"metadata says (replicas, isr, leader) = {state}")
            time.sleep(0.1)
        print(json.dumps({"seen_in_progress": seen_in_progress, "replicas": state[0], "isr": state[1], "leader": state[2],
                          "elapsed_s": round(time.monotonic() - start, 2)}))
    finally:
        admin.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partition", type=int, default=0)
    ap.add_argument("--to", required=True, help="the target replicas, comma-separated broker ids")
    ap.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args()
    main(lambda: run(args))
