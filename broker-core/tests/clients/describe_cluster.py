#!/usr/bin/env python3
"""kafka-python's admin on what operators ask of a cluster: describe_cluster, describe_log_dirs,
describe_producers and describe_metadata_quorum (DescribeCluster, DescribeLogDirs,
DescribeProducers, DescribeQuorum).

Produces N records to TOPIC (1 partition) with one idempotent producer, then checks, within a
deadline: describe_producers at the partition's leader names that one producer, its last
sequence N - 1; describe_cluster
lists exactly the brokers BROKERS with a cluster id and a controller among them;
describe_log_dirs asks every broker, each answers one absolute log directory, and the partition
TOPIC-0 is listed by at least one broker with a size of at least N bytes; describe_metadata_quorum
(forwarded to the quorum's leader by whichever broker it reaches) names a leader among VOTERS
with an epoch > 0, lists exactly VOTERS as current voters, and has each voter's log end reach the
high watermark (the followers catch up) with a last fetch time set.
"""

import argparse
import os
import time

from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from common import Deadline, expect, fail, main


def ids(text):
    return sorted(int(x) for x in text.split(",") if x)


def run(args):
    brokers, voters = ids(args.brokers), ids(args.voters)
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all", enable_idempotence=True, request_timeout_ms=15000, max_block_ms=30000)
    try:
        for i in range(args.n):
            producer.send(args.topic, value=b"describe-%06d" % i)
        producer.flush(timeout=45)
    finally:
        producer.close()
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=15000)
    try:
        tp = TopicPartition(args.topic, 0)
        producers = admin.describe_producers([tp])[tp].active_producers
        expect(len(producers) == 1 and producers[0].producer_id >= 0 and producers[0].last_sequence == args.n - 1,
               f"describe_producers: expected one producer with last sequence {args.n - 1}: {producers}")
        cluster = admin.describe_cluster()
        listed = sorted(b["broker_id"] for b in cluster["brokers"])
        expect(listed == brokers, f"describe_cluster lists brokers {listed}, expected {brokers}: {cluster}")
        expect(cluster["cluster_id"], f"describe_cluster: no cluster id: {cluster}")
        expect(cluster["controller_id"] in brokers, f"describe_cluster: controller {cluster['controller_id']} is no broker: {cluster}")

        dirs = admin.describe_log_dirs()
        expect(sorted(d["broker"] for d in dirs) == brokers, f"describe_log_dirs answered by {[d['broker'] for d in dirs]}: {dirs}")
        sizes = []
        for answer in dirs:
            expect(len(answer["log_dirs"]) == 1, f"broker {answer['broker']}: {len(answer['log_dirs'])} log dirs: {answer}")
            d = answer["log_dirs"][0]
            expect(d["error_code"] == 0 and os.path.isabs(d["log_dir"]), f"broker {answer['broker']}: {d}")
            # v4's volume size and free bytes (statvfs of the directory).
            expect(0 < d.get("usable_bytes", -1) <= d.get("total_bytes", -1), f"broker {answer['broker']}: no volume size and free bytes: {d}")
            for t in d["topics"]:
                sizes += [p["partition_size"] for p in t["partitions"] if t["name"] == args.topic and p["partition_index"] == 0]
        expect(sizes and max(sizes) >= args.n, f"describe_log_dirs: {args.topic}-0 sizes {sizes}, expected one of at least {args.n} bytes: {dirs}")

        deadline = Deadline(args.timeout, "every voter's log end at the high watermark")
        while True:
            q = admin.describe_metadata_quorum()
            p = q["topics"][0]["partitions"][0]
            expect(p["error"] is None, f"describe_metadata_quorum: {p}")
            expect(p["leader_id"] in voters and p["leader_epoch"] > 0, f"describe_metadata_quorum: leader {p['leader_id']} epoch {p['leader_epoch']}: {q}")
            listed = sorted(v["replica_id"] for v in p["current_voters"])
            expect(listed == voters, f"describe_metadata_quorum lists voters {listed}, expected {voters}: {q}")
            behind = [v for v in p["current_voters"] if v["log_end_offset"] < p["high_watermark"] or v["last_fetch_timestamp"] < 0]
            if not behind:
                print(f"quorum: leader {p['leader_id']} epoch {p['leader_epoch']} hw {p['high_watermark']}, "
                      f"voters {[(v['replica_id'], v['log_end_offset']) for v in p['current_voters']]}")
                return
            deadline.check(f"behind: {behind}")
            time.sleep(0.2)
    finally:
        admin.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--brokers", default="0")
    ap.add_argument("--voters", default="0")
    ap.add_argument("--timeout", type=float, default=20)
    args = ap.parse_args()
    main(lambda: run(args))
