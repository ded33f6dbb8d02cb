#!/usr/bin/env python3
"""Two confluent-kafka consumers share a group, then one leaves and the other takes over.

Produces N keyed records to a topic of P partitions (the broker's --num-partitions) and notes
where each landed. Two consumers of one group (`--strategy`: range or cooperative-sticky under
the classic protocol; with `--protocol consumer`, KIP-848, the broker's uniform or range
assignor) subscribe; both must get a non-empty share, and their assignments must split the P partitions
with no overlap. With `--b-joins-late`, B subscribes only once A owns every partition and has
read from each: on each partition B then gets, its first record must be at the offset A
committed there when it gave the partition up. Each reads part of its share, committing synchronously with explicit offsets
(last read + 1), and on every revocation. Then consumer A closes (a LeaveGroup): B must end up
owning every partition, and on each partition it takes over its first record must be at the
offset A committed there (read back with committed()), so no committed offset is skipped. At
the end every produced record was read at least once, each at the partition and offset its
delivery report named with its key and value; re-reads (allowed: at least once) are counted
and printed.
"""

import argparse
import json

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from common import Deadline, confluent_partitions, expect, fail, main


def record(i):
    return f"gs-key-{i:06d}".encode(), f"gs-value-{i:06d}".encode()


def produce(bootstrap, topic, n):
    """{(partition, offset): i} from the delivery reports of N records."""
    # Small batches, so a consumer's fetches (small too) interleave the partitions it owns.
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.num.messages": 20, "message.timeout.ms": 30000})
    reports = []
    for i in range(n):
        key, value = record(i)
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=lambda err, msg: reports.append((err, msg)))
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(45)
    expect(left == 0, f"{topic}: {left} of {n} records undelivered after flush(45 s)")
    at = {}
    for err, msg in reports:
        if err is not None:
            fail(f"{topic}: delivery of {msg.key()!r} failed: {err}")
        at[(msg.partition(), msg.offset())] = int(msg.key().decode().rsplit("-", 1)[1])
    expect(sorted(at.values()) == list(range(n)), f"{topic}: delivery reports do not cover records 0..{n} once each")
    return at


class Member:
    """One consumer of the group and what it saw: records, commits, assignments, first reads."""

    def __init__(self, name, bootstrap, group, strategy, topic, protocol):
        self.name, self.topic = name, topic
        self.reads = []  # (partition, offset, key, value)
        self.next = {}  # partition -> offset after the last record read
        self.committed = {}  # partition -> offset this member last committed
        self.events = []  # ("assign"|"revoke", [partitions])
        self.first = {}  # partition -> first offset read since `watch_first()`
        self.watching = False
        self.closed = False
        self.cap = {}  # partition -> next offset at which this member stops reading it (paused)
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"group-split-{name}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "max.partition.fetch.bytes": 2048,
        }
        if protocol == "consumer":
            # KIP-848: the broker assigns, and its group.consumer.* settings time the group.
            config.update({"group.protocol": "consumer", "group.remote.assignor": strategy})
        else:
            config.update({"partition.assignment.strategy": strategy, "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke)

    def on_assign(self, consumer, partitions):
        self.events.append(("assign", sorted(tp.partition for tp in partitions)))

    def on_revoke(self, consumer, partitions):
        self.events.append(("revoke", sorted(tp.partition for tp in partitions)))
        # What was read of a partition given up is committed, so its next owner starts there.
        self.commit([tp.partition for tp in partitions])
        for tp in partitions:
            self.next.pop(tp.partition, None)

    def assignment(self):
        if self.closed:
            return []
        return sorted(tp.partition for tp in self.consumer.assignment())

    def commit(self, partitions=None):
        """Commits (synchronously) the offset after the last record read of `partitions`."""
        ps = [p for p in (self.next if partitions is None else partitions) if p in self.next]
        if not ps:
            return
        offsets = [TopicPartition(self.topic, p, self.next[p]) for p in ps]
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            fail(f"{self.name}: commit {[(tp.partition, tp.offset) for tp in offsets]} failed: {e.args[0]}")
        for tp in done:
            if tp.error is not None:
                fail(f"{self.name}: commit of partition {tp.partition} at {tp.offset} failed: {tp.error}")
            self.committed[tp.partition] = tp.offset

    def poll(self, timeout):
        """Reads up to 20 records (a few at a time, so the phases end close to their marks)."""
        for msg in self.consumer.consume(num_messages=20, timeout=timeout):
            if msg.error() is not None:
                fail(f"{self.name}: consumer error {msg.error()}")
            p, offset = msg.partition(), msg.offset()
            self.reads.append((p, offset, msg.key(), msg.value()))
            self.next[p] = offset + 1
            if self.watching and p not in self.first:
                self.first[p] = offset
            if p in self.cap and self.next[p] >= self.cap[p]:
                # Leave the rest for whoever takes the partition over: however fast this
                # member reads, the takeover then always has records to start on.
                self.consumer.pause([TopicPartition(self.topic, p)])

    def close(self):
        self.consumer.close()
        self.closed = True

    def watch_first(self):
        self.watching, self.first = True, {}


def drive(members, deadline, done, progress):
    """Polls every member in turn until `done()`, or fails at the deadline."""
    while not done():
        deadline.check(progress())
        for m in members:
            m.poll(0.05)


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--strategy", required=True, choices=["range", "roundrobin", "cooperative-sticky", "uniform"])
    ap.add_argument("--protocol", default="classic", choices=["classic", "consumer"])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--partitions", type=int, default=6, help="the topic must have this many partitions")
    ap.add_argument("--before-leave", type=int, default=150,
                    help="records each consumer reads of its share before A leaves")
    ap.add_argument("--b-joins-late", action="store_true",
                    help="B subscribes only once A owns every partition and has read from each")
    args = ap.parse_args()
    topic, n = args.topic, args.n

    at = produce(args.bootstrap, topic, n)
    from confluent_kafka.admin import AdminClient
    partitions = confluent_partitions(AdminClient({"bootstrap.servers": args.bootstrap}), topic, Deadline(20, "metadata"))
    expect(partitions == list(range(args.partitions)), f"{topic}: partitions {partitions}, expected {args.partitions}")
    per_partition = {p: sum(1 for (q, _) in at if q == p) for p in partitions}
    expect(all(c > args.before_leave for c in per_partition.values()),
           f"{topic}: records per partition {per_partition}: each needs more than {args.before_leave}")

    a, b = Member("A", args.bootstrap, args.group, args.strategy, topic, args.protocol), None
    # A never reads the last 50 records of a partition (the takeover check needs some left).
    a.cap = {p: c - 50 for p, c in per_partition.items()}
    describe = lambda: (f"A assigned {a.assignment()} read {len(a.reads)} events {a.events}"
                        + (f"; B assigned {b.assignment()} read {len(b.reads)} events {b.events}" if b else ""))
    if args.b_joins_late:
        # Phase 0: A alone owns every partition and reads from each.
        deadline = Deadline(60, f"{args.strategy}: A alone reading from all {len(partitions)} partitions")
        drive([a], deadline, lambda: (a.assignment() == partitions and len(a.reads) >= args.before_leave
                                      and set(a.next) >= set(partitions)), describe)
        a.commit()
    b = Member("B", args.bootstrap, args.group, args.strategy, topic, args.protocol)
    b.watch_first()

    # Phase 1: the group forms (or B joins it) and splits the partitions.
    deadline = Deadline(60, f"{args.strategy}: two consumers splitting {len(partitions)} partitions")
    split = lambda: (a.assignment() and b.assignment() and not set(a.assignment()) & set(b.assignment())
                     and sorted(a.assignment() + b.assignment()) == partitions)
    drive([a, b], deadline, split, describe)
    share = {"A": a.assignment(), "B": b.assignment()}
    # B's partitions were A's when B joined late: B starts at what A committed there (A commits
    # what it read of a partition when it is revoked, and no one else commits it).
    handed = {}
    if args.b_joins_late:
        try:
            handed = {tp.partition: tp.offset for tp in b.consumer.committed([TopicPartition(topic, p) for p in share["B"]], timeout=10)}
        except KafkaException as e:
            fail(f"B: committed() for {share['B']} failed: {e.args[0]}")

    # Each reads part of its share, committing as it goes.
    read_since = {m.name: len(m.reads) for m in (a, b)}
    deadline = Deadline(60, f"{args.strategy}: each consumer reading {args.before_leave} records of its share")

    commits = {"A": 0, "B": 0}

    def enough():
        for m in (a, b):
            if len(m.reads) - read_since[m.name] >= 50 * (1 + commits[m.name]):
                m.commit()
                commits[m.name] += 1
        return all(len(m.reads) - read_since[m.name] >= args.before_leave and set(m.next) >= set(share[m.name])
                   for m in (a, b))
    drive([a, b], deadline, enough, describe)
    expect(share == {"A": a.assignment(), "B": b.assignment()},
           f"the assignment changed while both consumers were in the group: {share} then {describe()}")
    for m in (a, b):
        stray = {r[0] for r in m.reads[read_since[m.name]:]} - set(share[m.name])
        expect(not stray, f"{m.name} read partitions {sorted(stray)} outside its assignment {share[m.name]}")
        m.commit()
    b_first_joined = dict(b.first)
    for p, offset in sorted(handed.items()):
        expect(b.first.get(p) == offset, f"partition {p} (A's, handed to B when it joined): B's first record is at "
                                         f"offset {b.first.get(p)}, committed offset {offset}")
    a_committed = {p: a.committed.get(p) for p in share["A"]}
    for p in share["A"]:
        expect(a_committed[p] is not None and a_committed[p] < max(o for (q, o) in at if q == p) + 1,
               f"partition {p} (A's): A committed {a_committed[p]}; the test needs A to have read some of it, "
               f"not all ({per_partition[p]} records)")

    # Phase 2: A leaves; B must take over every partition, starting at A's commits.
    b.watch_first()
    a.close()
    deadline = Deadline(60, f"{args.strategy}: B owning all partitions after A left")
    drive([b], deadline, lambda: b.assignment() == partitions, describe)
    try:
        fetched = b.consumer.committed([TopicPartition(topic, p) for p in share["A"]], timeout=10)
    except KafkaException as e:
        fail(f"B: committed() for {share['A']} failed: {e.args[0]}")
    fetched = {tp.partition: tp.offset for tp in fetched}
    expect(fetched == {p: a_committed[p] for p in share["A"]},
           f"committed() after A left: {fetched}, A committed {a_committed}")

    deadline = Deadline(90, f"{args.strategy}: B reading to the end")
    drive([b], deadline, lambda: {at[(p, o)] for (p, o, _, _) in a.reads + b.reads if (p, o) in at} == set(range(n)),
          lambda: f"{len({(p, o) for (p, o, _, _) in a.reads + b.reads})} of {n} records read; {describe()}")
    b.commit()
    for p in share["A"]:
        expect(b.first.get(p) == fetched[p],
               f"partition {p} (A's): B's first record after taking over is at offset {b.first.get(p)}, "
               f"committed offset {fetched[p]}")
    b.close()

    # Every record read matches its delivery report; count re-reads.
    seen = {}
    for (p, o, key, value) in a.reads + b.reads:
        expect((p, o) in at, f"read partition {p} offset {o}, which no delivery report named")
        want = record(at[(p, o)])
        expect((key, value) == want, f"partition {p} offset {o}: read {(key, value)}, produced {want}")
        seen[(p, o)] = seen.get((p, o), 0) + 1
    duplicates = sum(c - 1 for c in seen.values())
    summary = {"strategy": args.strategy, "b_joins_late": args.b_joins_late, "split": share, "handed": handed,
               "b_first_joined": b_first_joined, "a_committed": a_committed, "b_first": b.first, "reads": {"A": len(a.reads), "B": len(b.reads)}, "duplicates": duplicates,
               "events": {"A": a.events, "B": b.events}}
    print(json.dumps(summary))


if __name__ == "__main__":
    main(run)
