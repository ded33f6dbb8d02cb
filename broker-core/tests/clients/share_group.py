#!/usr/bin/env python3
"""KIP-932 share group with three confluent-kafka ShareConsumers at once (explicit acknowledgement).

Creates a 2-partition topic, sets the group's share.auto.offset.reset to earliest (a GROUP config
resource), and produces N records with values str(i) to partition i % 2. Then three
ShareConsumers of the group, one thread each, poll concurrently and acknowledge every record
they are handed by its value i:
  * i % 10 == 3: REJECT (archived: never delivered again);
  * i % 10 == 7 with delivery_count 1: RELEASE (must come back with delivery_count 2, then ACCEPT);
  * otherwise ACCEPT.
Acknowledgements go both ways a member may send them: every other batch with commit_sync()
(ShareAcknowledge), the rest piggybacked on the next poll's ShareFetch. The members stop once
every record that should end accepted is accepted and every rejected one rejected, and keep
polling 2 s more to catch any redelivery.

Checks, over every delivery (value, member, delivery_count, acknowledgement): each record is
the one produced (topic, partition, offset for its value); an accepted record is delivered only
that once; a rejected one exactly once; a released one exactly twice (delivery counts 1 then 2,
the second accepted); no delivery count other than 1 or 2; no record missing; all three members
were handed records; every commit_sync and every acknowledgement-commit callback reported no
error, and the callbacks confirmed every acknowledgement each member made. Then all three
close, and a fourth member of the group polls 3 s: it must be handed nothing. To show it was
fetching, one sentinel record is then produced to each partition and it must be handed exactly
those two.

Prints one summary line on stdout. The helpers here are shared with share_group_restart.py.
"""

import threading
import time

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from common import Deadline, confluent_partitions, expect, fail, main, produce_placed, share_reset_earliest, share_args

PARTITIONS = 2
MEMBERS = 3
# Acquisition is by whole produced batch: small batches let the three members share a partition.
PRODUCER_BATCH_RECORDS = 20
# ShareFetch's MaxRecords (a soft limit: the broker rounds up to whole batches).
POLL_RECORDS_MAX = 50
# A member "works" this long per batch.
WORK_PER_BATCH_S = 0.02
# Members join one by one, and the first could drain the topic before the last has joined: a
# member that has been handed records waits (up to this long from the start) until every member
# has been, before it polls again.
PEERS_WAIT_S = 20.0
COMMIT_TIMEOUT_S = 20.0
# After the last expected acknowledgement: how long the members keep polling for redeliveries.
TAIL_S = 2.0
# How long the fourth member polls before the sentinels, and must be handed nothing.
QUIET_S = 3.0

ACK_NAMES = {AcknowledgeType.ACCEPT: "ACCEPT", AcknowledgeType.RELEASE: "RELEASE", AcknowledgeType.REJECT: "REJECT"}


# ---------------------------------------------------------------------------------------------
# Helpers shared with share_group_restart.py.

def setup(bootstrap, topic, group, deadline):
    """Creates `topic` with PARTITIONS partitions and sets the group's share.auto.offset.reset
    to earliest, checked with describe_configs."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(timeout=20)
    except KafkaException as e:
        fail(f"create_topics({topic!r}, {PARTITIONS} partitions) failed: {e.args[0]}")
    partitions = confluent_partitions(admin, topic, deadline)
    expect(partitions == list(range(PARTITIONS)), f"{topic}: partitions {partitions}, created {PARTITIONS}")
    share_reset_earliest(admin, group)
    return partitions


def produce(bootstrap, topic, values, partition_of, deadline, fresh=True):
    """Produces each of `values` (str) to partition `partition_of(index)`, acks=all; returns
    {value: (partition, offset)}. Into a `fresh` topic: checks each partition's offsets are
    dense from 0."""
    placed = produce_placed(bootstrap, topic, values, partition_of, deadline, PRODUCER_BATCH_RECORDS)
    by_partition = {}
    for p, o in placed.values() if fresh else []:
        by_partition.setdefault(p, []).append(o)
    for p, offsets in sorted(by_partition.items()):
        expect(sorted(offsets) == list(range(len(offsets))), f"{topic}: partition {p}: offsets not dense from 0")
    return placed


def share_consumer(bootstrap, group, name, debug, poll_records=POLL_RECORDS_MAX):
    """A ShareConsumer in explicit acknowledgement mode; `poll_records` is ShareFetch's MaxRecords."""
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": poll_records,
    }
    if debug:
        config["debug"] = "protocol,cgrp,fetch"
    return ShareConsumer(config)


def commit(consumer, what):
    """commit_sync(); fails on an exception or any partition's error. Returns the partitions
    the broker answered for."""
    try:
        result = consumer.commit_sync(COMMIT_TIMEOUT_S)
    except KafkaException as e:
        fail(f"{what}: commit_sync raised {e.args[0]}")
    bad = {f"{tp.topic}[{tp.partition}]": str(err) for tp, err in result.items() if err is not None}
    expect(not bad, f"{what}: commit_sync reported errors {bad}")
    return {tp.partition for tp in result}


class AckCallback:
    """What the acknowledgement-commit callbacks of one consumer reported: the (partition,
    offset)s confirmed, and any error."""

    def __init__(self, topic):
        self.topic = topic
        self.confirmed = set()
        self.errors = []

    def __call__(self, offsets, exception):
        if exception is not None:
            self.errors.append(f"{exception} for {sorted((tp.partition, sorted(o)) for tp, o in offsets.items())}")
        for tp, offs in offsets.items():
            if tp.topic != self.topic:
                self.errors.append(f"confirmed offsets of topic {tp.topic!r}")
            self.confirmed.update((tp.partition, o) for o in offs)


def expect_drained(bootstrap, topic, group, partitions, debug):
    """A new member of `group` polls QUIET_S and must be handed nothing; then one sentinel per
    partition is produced and it must be handed exactly those (so it was fetching all along)."""
    deadline = Deadline(60, "a fourth member draining the group")
    consumer = share_consumer(bootstrap, group, "share-after", debug)
    acks = AckCallback(topic)
    consumer.set_acknowledgement_commit_callback(acks)
    sentinels = {f"sentinel-{p}": p for p in partitions}
    try:
        consumer.subscribe([topic])
        quiet_until = time.monotonic() + QUIET_S
        while time.monotonic() < quiet_until:
            for m in consumer.poll(0.2):
                expect(m.error() is None, f"fourth member: poll error {m.error()}")
                fail(f"fourth member was handed partition {m.partition()} offset {m.offset()} value {m.value()!r} "
                     f"(delivery count {m.delivery_count()}): everything had been acknowledged")
        placed = produce(bootstrap, topic, list(sentinels), lambda i: partitions[i], deadline, fresh=False)
        seen = {}
        while len(seen) < len(sentinels):
            deadline.check(f"sentinels handed to the fourth member: {sorted(seen)} of {sorted(sentinels)}")
            for m in consumer.poll(0.5):
                expect(m.error() is None, f"fourth member: poll error {m.error()}")
                value = m.value().decode()
                expect(value in sentinels, f"fourth member was handed partition {m.partition()} offset {m.offset()} "
                                           f"value {value!r} (delivery count {m.delivery_count()}) before the sentinels")
                expect(value not in seen, f"fourth member was handed {value!r} twice")
                expect((m.partition(), m.offset()) == placed[value],
                       f"{value!r} handed at partition {m.partition()} offset {m.offset()}, produced at {placed[value]}")
                expect(m.delivery_count() == 1, f"{value!r}: delivery count {m.delivery_count()}, expected 1")
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                seen[value] = m.offset()
        commit(consumer, "fourth member")
    finally:
        consumer.close()
    expect(not acks.errors, f"fourth member: acknowledgement callback errors {acks.errors}")


# ---------------------------------------------------------------------------------------------
# Three members at once.

def decide(i, delivery_count):
    if i % 10 == 3:
        return AcknowledgeType.REJECT
    if i % 10 == 7 and delivery_count == 1:
        return AcknowledgeType.RELEASE
    return AcknowledgeType.ACCEPT


class Run:
    """What the three member threads share, under one lock."""

    def __init__(self, n):
        self.lock = threading.Lock()
        self.deliveries = []  # (i, member, delivery_count, ack name, partition, offset)
        self.final = {}  # i -> "ACCEPT" | "REJECT" (the last acknowledgement that ends a record)
        self.want = {i: ("REJECT" if i % 10 == 3 else "ACCEPT") for i in range(n)}
        self.stop = threading.Event()
        self.problems = []
        self.commits = {}  # member -> commit_sync calls that carried acknowledgements
        self.acked = {}  # member -> {(partition, offset)} it acknowledged
        self.callbacks = {}  # member -> AckCallback
        self.handed_to = set()  # members handed at least one record
        self.peers_changed = threading.Condition(self.lock)

    def problem(self, what):
        with self.lock:
            self.problems.append(what)
        self.finish()

    def finish(self):
        """Stops every member, waking those waiting for their peers."""
        with self.peers_changed:
            self.stop.set()
            self.peers_changed.notify_all()

    def done(self):
        with self.lock:
            return len(self.final) == len(self.want) and all(self.final.get(i) == w for i, w in self.want.items())


def member(run, name, args, placed, start):
    """One ShareConsumer, used from this thread only."""
    try:
        consumer = share_consumer(args.bootstrap, args.group, name, args.debug)
    except KafkaException as e:
        run.problem(f"{name}: ShareConsumer() raised {e}")
        start.abort()
        return
    acks = AckCallback(args.topic)
    consumer.set_acknowledgement_commit_callback(acks)
    run.callbacks[name] = acks
    acked = run.acked.setdefault(name, set())
    batches = 0
    try:
        consumer.subscribe([args.topic])
        start.wait(30)
        peers_until = time.monotonic() + PEERS_WAIT_S
        while not run.stop.is_set():
            msgs = consumer.poll(0.5)
            handed, batch_partitions = 0, set()
            for m in msgs:
                if m.error() is not None:
                    run.problem(f"{name}: poll error {m.error()}")
                    continue
                value = m.value().decode()
                i = int(value)
                where = (m.partition(), m.offset())
                if m.topic() != args.topic or placed.get(value) != where:
                    run.problem(f"{name}: value {value!r} handed from {m.topic()} {where}, produced at {placed.get(value)}")
                dc = m.delivery_count()
                ack = decide(i, dc)
                with run.lock:
                    run.deliveries.append((i, name, dc, ACK_NAMES[ack], m.partition(), m.offset()))
                    if ack != AcknowledgeType.RELEASE:
                        run.final[i] = ACK_NAMES[ack]
                consumer.acknowledge(m, ack)
                acked.add(where)
                batch_partitions.add(m.partition())
                handed += 1
            if handed:
                batches += 1
                time.sleep(WORK_PER_BATCH_S)
                with run.peers_changed:
                    run.handed_to.add(name)
                    run.peers_changed.notify_all()
                    run.peers_changed.wait_for(lambda: len(run.handed_to) == MEMBERS or run.stop.is_set(),
                                               max(0.0, peers_until - time.monotonic()))
                if batches % 2 == 1:
                    answered = commit(consumer, f"{name} batch {batches}")
                    expect(batch_partitions <= answered, f"{name} batch {batches}: acknowledged partitions "
                                                         f"{sorted(batch_partitions)}, commit_sync answered for {sorted(answered)}")
                    run.commits[name] = run.commits.get(name, 0) + 1
        commit(consumer, f"{name} at the end")
    except Exception as e:  # noqa: BLE001 -- any failure in a member thread is reported by the main thread
        run.problem(f"{name}: {type(e).__name__}: {e}")
    finally:
        try:
            consumer.close()
        except Exception as e:  # noqa: BLE001
            run.problem(f"{name}: close() raised {type(e).__name__}: {e}")


def check(run, n):
    """Every delivery against the rules in the module docstring."""
    by_value = {}
    for i, name, dc, ack, p, o in run.deliveries:
        by_value.setdefault(i, []).append((name, dc, ack))
        expect(dc in (1, 2), f"value {i} (partition {p} offset {o}) delivered to {name} with delivery count {dc}")
    missing = [i for i in range(n) if i not in by_value]
    expect(not missing, f"{len(missing)} records never delivered, first {missing[:10]}")
    for i in range(n):
        got = by_value[i]
        shape = [(dc, ack) for _, dc, ack in got]
        if i % 10 == 3:
            expect(shape == [(1, "REJECT")], f"value {i} (rejected): deliveries {got}, expected one with count 1")
        elif i % 10 == 7:
            expect(shape == [(1, "RELEASE"), (2, "ACCEPT")],
                   f"value {i} (released once): deliveries {got}, expected count 1 released then count 2 accepted")
        else:
            expect(shape == [(1, "ACCEPT")], f"value {i} (accepted): deliveries {got}, expected one with count 1")


def run_members(args):
    deadline = Deadline(30, "setup and produce")
    partitions = setup(args.bootstrap, args.topic, args.group, deadline)
    placed = produce(args.bootstrap, args.topic, [str(i) for i in range(args.n)], lambda i: i % PARTITIONS, deadline)

    started = time.monotonic()
    run = Run(args.n)
    start = threading.Barrier(MEMBERS + 1)
    names = [f"share-{k}" for k in range(MEMBERS)]
    threads = [threading.Thread(target=member, args=(run, name, args, placed, start), name=name, daemon=True) for name in names]
    for t in threads:
        t.start()
    try:
        start.wait(30)
    except threading.BrokenBarrierError:
        fail(f"the members did not all subscribe within 30 s: {run.problems[:3]}")
    consume = Deadline(60, "three members consuming")
    done_at = None
    while not run.stop.is_set():
        if done_at is None and run.done():
            done_at = time.monotonic()
        if done_at is not None and time.monotonic() - done_at >= TAIL_S:
            break
        if consume.expired():
            with run.lock:
                ended = len(run.final)
                pending = sorted(i for i in run.want if run.final.get(i) != run.want[i])
            run.problem(f"not done within {consume.seconds} s: {ended} of {args.n} records ended; "
                        f"first pending values {pending[:10]}; {len(run.deliveries)} deliveries")
        time.sleep(0.05)
    run.finish()
    for t in threads:
        t.join(60)
        expect(not t.is_alive(), f"{t.name}: a member thread did not finish within 60 s of the stop")
    consumed_s = time.monotonic() - started
    expect(not run.problems, f"{len(run.problems)} problems, first: {run.problems[:5]}")

    check(run, args.n)
    per_member = {name: sum(1 for d in run.deliveries if d[1] == name) for name in names}
    idle = [name for name, count in per_member.items() if count == 0]
    expect(not idle, f"members {idle} were handed no records, though the others waited {PEERS_WAIT_S} s for them "
                     f"(per member: {per_member})")
    for name in names:
        acks = run.callbacks[name]
        expect(not acks.errors, f"{name}: acknowledgement callback errors {acks.errors[:3]}")
        unconfirmed = sorted(run.acked[name] - acks.confirmed)
        expect(not unconfirmed, f"{name}: {len(unconfirmed)} acknowledgements never confirmed by the callback, "
                                f"first {unconfirmed[:10]}")
    expect(sum(run.commits.values()) > 0, "no commit_sync carried acknowledgements")

    expect_drained(args.bootstrap, args.topic, args.group, partitions, args.debug)
    releases = sum(1 for d in run.deliveries if d[3] == "RELEASE")
    rejects = sum(1 for d in run.deliveries if d[3] == "REJECT")
    print(f"share group {args.group!r}: {args.n} records, {len(run.deliveries)} deliveries ({releases} released and "
          f"redelivered, {rejects} rejected) in {consumed_s:.1f} s; per member {per_member}; "
          f"commit_sync with acknowledgements per member {run.commits}; a fourth member was handed nothing")


def run():
    args = share_args(__doc__, 2000)
    run_members(args)


if __name__ == "__main__":
    main(run)
