#!/usr/bin/env python3
"""A share group rides out the SIGKILL of a share-partition leader or of its group coordinator.

Run by `tests/all/real_cluster/groups.rs` against a three-broker cluster (replication factor 3,
min.insync.replicas 2). The claim under test (issue 29): a share group's state survives
coordinator and leader failover without losing an accepted acknowledgement or redelivering an
accepted record. Steps, each with its own deadline:

1. Metadata of --topic (--partitions partitions, fully replicated); every partition of
   `__consumer_offsets` (created by a throwaway classic consumer's FindCoordinator) on
   --replicas in-sync replicas.
2. Choose what dies and the group. --kill leader: the victim is the leader of the first data
   partition not led by --avoid (the controller, which the test must not kill), and the group
   is the first `<--group>-i` whose coordinator is another broker. --kill coordinator: the
   group is the first `<--group>-i` coordinated by neither --avoid nor a data partition's
   leader (failing that, by anyone but --avoid), and the victim is its coordinator. The
   coordinator is FindCoordinator's answer (describe_consumer_groups before the group exists),
   checked against the leader of the group's `__consumer_offsets` partition (Kafka's hash).
3. The group's share.auto.offset.reset is set to earliest (incremental_alter_configs on a GROUP
   resource, read back with describe_configs); --n records with values str(i) are produced to
   partition i % partitions (acks=all, idempotent, small batches).
4. Two ShareConsumers (explicit acknowledgement, one thread each) ACCEPT every record they are
   handed and commit_sync(--commit-s) after each poll's batch, paced to --rate records/s
   between them so the failure lands mid-consumption. A record's acceptance is *confirmed*
   when commit_sync returned no error for its partition after it was acknowledged (or an
   acknowledgement-commit callback reported its offset with no error); the time of each
   delivery (when poll returned it) and each confirmation is written down.
5. After --kill-after confirmations on every partition: --ready is written as JSON {"victim",
   "group", "coordinator", "leaders", "partitions"}; the test SIGKILLs the victim and creates
   --killed. Within --recovery-s-max of seeing it, --recovered-after confirmations made after
   the kill must be counted on each partition the victim led (--kill leader) or on every
   partition (--kill coordinator), and metadata must show that partition's new leader or the
   group's new coordinator; then --recovered is written (JSON) and the test restarts the victim
   and creates --restarted.
6. The members consume to the end: until every record is confirmed, or every record is
   acknowledged and nothing has been handed out for --tail-s (what is left then are
   acknowledgements whose answer was lost with a broker: outcome unknown). Then they close,
   and a fresh member of the group polls --quiet-s: it may be handed only records whose
   acceptance was never confirmed (it accepts them), never a confirmed one; then one sentinel
   per partition is produced and it must be handed exactly those.

Checks over every delivery:
  * each record is the one produced (partition and offset of its value);
  * none lost: every record is accepted with a confirmation, or was acknowledged and never
    handed out again (its acknowledgement's answer was lost in the failover; counted and
    printed, and the fresh member, handed nothing, shows no such record is available);
  * no delivery of a record after its acceptance was confirmed (delivery time > confirmation
    time), whoever it went to;
  * delivery counts: at least 1, at most --delivery-count-max, strictly rising per record
    (a leader taking over keeps what the old one wrote);
  * records delivered more than once (all before any confirmed acceptance: the acquisitions in
    flight at the failure come back) are counted and printed, not failed;
  * at least one confirmation after the restart, and both members handed records after it
    (consumption went on with all brokers back, and both members are still in the group: after
    a coordinator failover they must have rejoined at the new coordinator).

Prints one JSON line: the choice, when recovery was reached, the longest time after the kill
with no confirmation (stall_s), deliveries, redeliveries, confirmations per phase, unknown
outcomes, commit errors seen, delivery-count histogram.
"""

import argparse
import json
import os
import threading
import time

from confluent_kafka import AcknowledgeType, Consumer, KafkaException, ShareConsumer
from confluent_kafka.admin import AdminClient

from common import Deadline, confluent_partitions, expect, fail, main, produce_placed, share_reset_earliest

offsets_topic = "__consumer_offsets"
admin_call_s = 5
# Acquisition is by whole produced batch: small batches keep what one poll acquires small.
producer_batch_records = 20
# ShareFetch's MaxRecords for each poll (a soft limit: the broker rounds up to whole batches).
poll_records_max = 40


def now():
    return time.monotonic()


# ---------------------------------------------------------------------------------------------
# The cluster: metadata, the offsets topic, the group's coordinator.

def partition_for(group, partitions):
    """The group's `__consumer_offsets` partition, as the broker (and Kafka) places it: Java's
    String.hashCode over UTF-16 code units, made non-negative, modulo the partition count."""
    h = 0
    data = group.encode("utf-16-be")
    for k in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[k:k + 2], "big")) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % partitions


def topic_leaders(admin, topic, timeout=admin_call_s):
    """{partition: (leader, replicas, isr)} of `topic`, or an error string."""
    try:
        t = admin.list_topics(topic, timeout=timeout).topics.get(topic)
    except KafkaException as e:
        return f"metadata: {e.args[0]}"
    if t is None or t.error is not None or not t.partitions:
        return f"{topic}: {t.error if t is not None else 'not listed'}"
    return {p.id: (p.leader, sorted(p.replicas), sorted(p.isrs)) for p in t.partitions.values()}


def wait_replicated(admin, topic, replicas, deadline, meanwhile=lambda: None):
    """{partition: leader} once every partition of `topic` has `replicas` replicas, all in sync."""
    while True:
        meanwhile()
        got = topic_leaders(admin, topic)
        why = got if isinstance(got, str) else None
        if why is None:
            for p, (leader, reps, isr) in sorted(got.items()):
                if len(reps) != replicas or len(isr) != replicas or leader < 0:
                    why = f"{topic}-{p}: leader {leader}, replicas {reps}, ISR {isr}; want {replicas} of each"
                    break
            if why is None:
                return {p: leader for p, (leader, _, _) in got.items()}
        deadline.check(why)
        time.sleep(0.1)


def find_coordinator(admin, group):
    """The coordinator id FindCoordinator names for `group` (describe_consumer_groups of a
    group that does not exist yet), or an error string."""
    try:
        d = admin.describe_consumer_groups([group], request_timeout=admin_call_s)[group].result(timeout=admin_call_s + 1)
    except KafkaException as e:
        return str(e.args[0])
    return d.coordinator.id if d.coordinator is not None else "no coordinator"


def choose(admin, args, data_leaders, offsets_leaders, deadline):
    """(victim, group, coordinator) as the module docstring says."""
    avoid = set(args.avoid)
    if args.kill == "leader":
        led = [p for p, leader in sorted(data_leaders.items()) if leader not in avoid]
        expect(led, f"every partition of {args.topic} is led by an avoided broker: leaders {data_leaders}, avoid {sorted(avoid)}")
        victim = data_leaders[led[0]]
        wants = [lambda c: c != victim]
    else:
        victim = None
        wants = [lambda c: c not in avoid and c not in data_leaders.values(), lambda c: c not in avoid]
    tried = {}
    candidates = [f"{args.group}-{i}" for i in range(32)]
    coordinators = {}
    for group in candidates:
        while True:
            c = find_coordinator(admin, group)
            tried[group] = c
            if not isinstance(c, str):
                break
            deadline.check(f"FindCoordinator for {group!r}: {c}")
            time.sleep(0.2)
        want = offsets_leaders[partition_for(group, len(offsets_leaders))]
        expect(c == want, f"FindCoordinator named broker {c} for {group!r}, but its {offsets_topic} partition "
                          f"{partition_for(group, len(offsets_leaders))} is led by {want} (leaders {offsets_leaders})")
        coordinators[group] = c
        if wants[0](c):
            break
    for want in wants:
        for group in candidates:
            if group in coordinators and want(coordinators[group]):
                c = coordinators[group]
                return (victim if victim is not None else c), group, c
    fail(f"no group among {sorted(coordinators)} has a coordinator that fits --kill {args.kill}: {coordinators}")


def produce(bootstrap, topic, values, partition_of, deadline):
    """{value: (partition, offset)} for each of `values`, acks=all."""
    return produce_placed(bootstrap, topic, values, partition_of, deadline, producer_batch_records)


def share_consumer(args, name):
    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.chosen_group,
        "client.id": name,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": poll_records_max,
    }
    if args.debug:
        config["debug"] = "protocol,cgrp,fetch"
    return ShareConsumer(config)


# ---------------------------------------------------------------------------------------------
# The members.

class Run:
    """What the member threads and the main thread share, under one lock. Times are
    time.monotonic() seconds."""

    def __init__(self, topic, at):
        self.topic = topic
        self.at = at  # (partition, offset) -> i
        self.at_of = {i: po for po, i in at.items()}
        self.lock = threading.Lock()
        self.deliveries = []  # (t, member, i, partition, offset, delivery count, phase)
        self.confirmed = {}  # i -> (t, member, how, phase): the first confirmation
        self.acked = {}  # i -> acknowledgements sent
        self.unconfirmed_acks = {}  # i -> [(t, member, why)]: acknowledgements whose answer was not ok
        self.events = []  # (t, member, what): errors and refusals seen, in order
        self.commit_errors = {}  # error text -> count
        self.problems = []
        self.stop = threading.Event()
        self.phase = "before"
        self.marks = {}  # phase -> time it began
        self.per_member = {}

    def event(self, member, what):
        with self.lock:
            self.events.append((now(), member, what))

    def problem(self, what):
        with self.lock:
            self.problems.append(what)
        self.stop.set()

    def confirm(self, i, t, member, how):
        # Under self.lock.
        if i not in self.confirmed:
            self.confirmed[i] = (t, member, how, self.phase)

    def confirmed_after(self, since, partitions):
        """{partition: confirmations made after `since`} for `partitions`."""
        with self.lock:
            out = {p: 0 for p in partitions}
            for i, (t, _, _, _) in self.confirmed.items():
                p = self.at_of[i][0]
                if t > since and p in out:
                    out[p] += 1
            return out


def member(run, args, name, pace_s_per_record, started):
    """One ShareConsumer, used from this thread only."""
    try:
        consumer = share_consumer(args, name)
    except KafkaException as e:
        run.problem(f"{name}: ShareConsumer() raised {e}")
        return
    tp_key = lambda tp: (tp.topic, tp.partition)

    def on_commit(offsets, exception):
        t = now()
        with run.lock:
            for tp, offs in offsets.items():
                for o in offs:
                    i = run.at.get((tp.partition, o))
                    if i is None:
                        run.events.append((t, name, f"callback named {tp.topic}[{tp.partition}]@{o}, never produced"))
                    elif exception is None:
                        run.confirm(i, t, name, "callback")
                    else:
                        run.unconfirmed_acks.setdefault(i, []).append((t, name, f"callback: {exception}"))
            if exception is not None:
                run.events.append((t, name, f"callback error {exception} for "
                                            f"{sorted((tp.partition, min(o), max(o)) for tp, o in offsets.items() if o)}"))

    consumer.set_acknowledgement_commit_callback(on_commit)
    handed = 0
    try:
        consumer.subscribe([args.topic])
        started.wait(30)
        while not run.stop.is_set():
            try:
                msgs = consumer.poll(0.5)
            except KafkaException as e:
                run.event(name, f"poll raised {e.args[0]}")
                time.sleep(0.1)
                continue
            t = now()
            # Work on the batch before answering for it (this member's share of --rate), in
            # small sleeps so a stop is seen: records are held, acquired, most of the time, so
            # the failure finds acquisitions and acknowledgements in flight.
            rest = pace_s_per_record * len(msgs)
            while rest > 0 and not run.stop.is_set():
                time.sleep(min(0.05, rest))
                rest -= 0.05
            batch = {}  # partition -> [i]
            for m in msgs:
                err = m.error()
                if err is not None:
                    run.event(name, f"poll error {err}")
                    if err.fatal():
                        run.problem(f"{name}: fatal poll error {err}")
                    continue
                where, dc = (m.partition(), m.offset()), m.delivery_count()
                try:
                    i = int(m.value().decode())
                except ValueError:
                    run.problem(f"{name}: value {m.value()!r} at {where} is not a produced record")
                    continue
                if m.topic() != args.topic or run.at.get(where) != i:
                    run.problem(f"{name}: value {i} handed from {m.topic()} {where}, produced at {run.at_of.get(i)}")
                with run.lock:
                    run.deliveries.append((t, name, i, where[0], where[1], dc, run.phase))
                try:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                except Exception as e:  # noqa: BLE001 -- a refusal is a fact to record, the record comes back
                    run.event(name, f"acknowledge({where}) raised {type(e).__name__}: {e}")
                    continue
                with run.lock:
                    run.acked[i] = run.acked.get(i, 0) + 1
                batch.setdefault(where[0], []).append(i)
            if not batch:
                continue
            handed += sum(len(v) for v in batch.values())
            try:
                result = consumer.commit_sync(args.commit_s)
                error = None
            except KafkaException as e:
                result, error = {}, f"commit_sync raised {e.args[0]}"
            t = now()
            answered = {tp_key(tp): err for tp, err in result.items()}
            with run.lock:
                for p, values in batch.items():
                    why = error
                    if why is None:
                        if (args.topic, p) not in answered:
                            why = f"commit_sync answered {sorted(answered)}, not partition {p}"
                        elif answered[(args.topic, p)] is not None:
                            why = f"commit_sync: {answered[(args.topic, p)]}"
                    if why is None:
                        for i in values:
                            run.confirm(i, t, name, "commit_sync")
                    else:
                        run.commit_errors[why] = run.commit_errors.get(why, 0) + 1
                        run.events.append((t, name, f"partition {p}: {why} ({len(values)} records)"))
                        for i in values:
                            run.unconfirmed_acks.setdefault(i, []).append((t, name, why))
    except Exception as e:  # noqa: BLE001 -- any failure in a member thread is reported by the main thread
        run.problem(f"{name}: {type(e).__name__}: {e}")
    finally:
        with run.lock:
            run.per_member[name] = handed
        try:
            consumer.close()
        except Exception as e:  # noqa: BLE001
            run.event(name, f"close() raised {type(e).__name__}: {e}")


def drain(run, args, partitions):
    """A fresh member after the others closed: handed nothing confirmed (unconfirmed records it
    accepts), then exactly one sentinel per partition."""
    deadline = Deadline(40, "a fresh member draining the group")
    consumer = share_consumer(args, "share-drain")
    sentinels = {f"sentinel-{p}": p for p in partitions}
    resolved, late = [], []
    try:
        consumer.subscribe([args.topic])

        def take(m, sentinel_ok):
            err = m.error()
            if err is not None:
                run.event("drain", f"poll error {err}")
                return None
            value, where, dc = m.value().decode(), (m.partition(), m.offset()), m.delivery_count()
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if value in sentinels:
                expect(sentinel_ok, f"drain: sentinel {value!r} before it was produced")
                return value, where, dc
            i = int(value)
            expect(run.at.get(where) == i, f"drain: value {i} handed from {where}, produced at {run.at_of.get(i)}")
            with run.lock:
                run.deliveries.append((now(), "drain", i, where[0], where[1], dc, "drain"))
                (late if i in run.confirmed else resolved).append((i, dc))
            return value, where, dc

        def commit(what):
            try:
                result = consumer.commit_sync(args.commit_s)
            except KafkaException as e:
                fail(f"drain: commit_sync ({what}) raised {e.args[0]}")
            bad = {tp.partition: str(err) for tp, err in result.items() if err is not None}
            expect(not bad, f"drain: commit_sync ({what}) errors {bad}")
            return {tp.partition for tp in result}

        quiet_until = now() + args.quiet_s
        while now() < quiet_until:
            got = [take(m, False) for m in consumer.poll(0.2)]
            batch = [g for g in got if g is not None]
            if batch:
                answered = commit("unconfirmed records")
                t = now()
                with run.lock:
                    for _, (p, o), _ in batch:
                        if p in answered:
                            run.confirm(run.at[(p, o)], t, "drain", "commit_sync")
        placed = produce(args.bootstrap, args.topic, list(sentinels), lambda k: partitions[k], deadline)
        seen = {}
        while len(seen) < len(sentinels):
            deadline.check(f"sentinels handed to the fresh member: {sorted(seen)} of {sorted(sentinels)}")
            got = [take(m, True) for m in consumer.poll(0.5)]
            for g in got:
                if g is None:
                    continue
                value, where, dc = g
                if value in sentinels:
                    expect(value not in seen, f"drain: sentinel {value!r} handed twice")
                    expect(where == placed[value], f"drain: {value!r} handed at {where}, produced at {placed[value]}")
                    expect(dc == 1, f"drain: {value!r} with delivery count {dc}")
                    seen[value] = where
            if got:
                commit("sentinels")
    finally:
        consumer.close()
    return resolved, late


# ---------------------------------------------------------------------------------------------
# The run.

def check(run, n, dc_max, since):
    """The checks of the module docstring over every delivery and confirmation of `run`;
    returns (deliveries sorted by time, {i: its deliveries} of records delivered more than
    once, [i] acknowledged but never confirmed nor handed out again)."""
    deliveries = sorted(run.deliveries)
    by_i = {}
    for (t, who, i, p, o, dc, phase) in deliveries:
        by_i.setdefault(i, []).append((t, who, dc, phase))
    after_confirm = []
    for i, ds in sorted(by_i.items()):
        c = run.confirmed.get(i)
        if c is not None:
            for (t, who, dc, phase) in ds:
                if t > c[0]:
                    after_confirm.append(f"{i} (partition {run.at_of[i][0]} offset {run.at_of[i][1]}): confirmed by {c[1]} "
                                         f"via {c[2]} at {since(c[0])} s ({c[3]}), delivered to {who} at {since(t)} s "
                                         f"({phase}) with delivery count {dc}; all deliveries "
                                         f"{[(since(t2), w2, d2) for t2, w2, d2, _ in ds]}")
    expect(not after_confirm, f"{len(after_confirm)} records delivered again after their acceptance was confirmed "
                              f"(claim broken: an accepted record redelivered); first: {after_confirm[:5]}")
    bad_counts = [(i, [dc for _, _, dc, _ in ds]) for i, ds in by_i.items()
                  if any(dc < 1 or dc > dc_max for _, _, dc, _ in ds)
                  or any(b[2] <= a[2] for a, b in zip(ds, ds[1:]))]
    expect(not bad_counts, f"{len(bad_counts)} records with delivery counts outside 1..{dc_max} or not "
                           f"rising per delivery: first (value, counts) {sorted(bad_counts)[:10]}")
    never = [i for i in range(n) if i not in by_i]
    expect(not never, f"{len(never)} records never delivered (lost): first {never[:10]}")
    unknown = sorted(i for i in range(n) if i not in run.confirmed)
    not_acked = [i for i in unknown if i not in run.acked]
    expect(not not_acked, f"{len(not_acked)} records delivered but never acknowledged nor confirmed (lost): "
                          f"first {[(i, by_i[i]) for i in not_acked[:5]]}")
    # What is neither confirmed nor handed out again was acknowledged last: its answer was lost
    # with the failure, and the fresh member, handed nothing, shows it is not available.
    redelivered = {i: ds for i, ds in by_i.items() if len(ds) > 1}
    return deliveries, redelivered, unknown


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.rename(path + ".tmp", path)


def wait_file(path, seconds, what, run):
    deadline = Deadline(seconds, what)
    while not os.path.exists(path):
        expect(not run.problems, f"while waiting for {what}: {run.problems[:3]}")
        deadline.check()
        time.sleep(0.01)


def run_test():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True, help="prefix of the group id")
    ap.add_argument("--partitions", type=int, default=2, help="the topic must have this many")
    ap.add_argument("--kill", choices=["leader", "coordinator"], required=True)
    ap.add_argument("--avoid", type=int, action="append", default=[], help="a broker that must not be the victim")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=200, help="records handed out per second, both members together")
    ap.add_argument("--commit-s", type=float, default=10)
    ap.add_argument("--kill-after", type=int, default=200, help="confirmations per partition before --ready")
    ap.add_argument("--recovered-after", type=int, default=100, help="confirmations after the kill per watched partition")
    ap.add_argument("--recovery-s-max", type=float, default=20)
    ap.add_argument("--tail-s", type=float, default=3)
    ap.add_argument("--quiet-s", type=float, default=3)
    ap.add_argument("--delivery-count-max", type=int, default=3)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--killed", required=True)
    ap.add_argument("--recovered", required=True)
    ap.add_argument("--restarted", required=True)
    ap.add_argument("--debug", action="store_true", help="librdkafka debug=protocol,cgrp,fetch on every consumer")
    args = ap.parse_args()
    topic, n = args.topic, args.n

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    partitions = confluent_partitions(admin, topic, Deadline(20, f"metadata of {topic!r}"))
    expect(partitions == list(range(args.partitions)), f"{topic}: partitions {partitions}, expected {args.partitions}")
    data_leaders = wait_replicated(admin, topic, args.replicas, Deadline(20, f"{topic} on {args.replicas} in-sync replicas"))
    # A classic consumer's FindCoordinator creates the offsets topic; the admin calls come once it
    # is in place (see group_coordinator_kill.py for the librdkafka admin-client assertion).
    warm_up = Consumer({"bootstrap.servers": args.bootstrap, "group.id": f"{args.group}-warm-up"})
    offsets_leaders = wait_replicated(admin, offsets_topic, args.replicas, Deadline(30, f"{offsets_topic} on {args.replicas} in-sync replicas"),
                                      lambda: warm_up.poll(0.1))
    warm_up.close()
    victim, group, coordinator = choose(admin, args, data_leaders, offsets_leaders, Deadline(30, "choosing the group"))
    args.chosen_group = group
    victim_partitions = sorted(p for p, leader in data_leaders.items() if leader == victim)
    watched = victim_partitions if args.kill == "leader" else partitions
    share_reset_earliest(admin, group)

    values = [str(i) for i in range(n)]
    placed = produce(args.bootstrap, topic, values, lambda i: i % len(partitions), Deadline(45, f"producing {n} records"))
    at = {po: int(v) for v, po in placed.items()}
    expect(len(at) == n, f"{n} records produced to {len(at)} distinct places")
    run = Run(topic, at)

    started = threading.Barrier(3)
    names = ["share-a", "share-b"]
    pace = 2.0 / args.rate
    threads = [threading.Thread(target=member, args=(run, args, name, pace, started), daemon=True) for name in names]
    for t in threads:
        t.start()
    started.wait(30)
    t0 = now()
    since = lambda t: round(t - t0, 3)

    def progress():
        with run.lock:
            return (f"{len(run.confirmed)} of {n} confirmed, {len(run.deliveries)} deliveries, phase {run.phase}; "
                    f"problems {run.problems[:3]}; last events {[(since(t), m, w) for t, m, w in run.events[-6:]]}")

    def drive(deadline, done):
        while not done():
            expect(not run.problems, f"{len(run.problems)} problems, first: {run.problems[:5]}")
            deadline.check(progress())
            time.sleep(0.02)

    try:
        drive(Deadline(60, f"{args.kill_after} confirmations on each partition before the kill"),
              lambda: min(run.confirmed_after(0, partitions).values()) >= args.kill_after)
        with run.lock:
            confirmed_at_ready = len(run.confirmed)
        expect(confirmed_at_ready < n * 2 // 3, f"{confirmed_at_ready} of {n} confirmed before the kill: not mid-consumption")
        write_json(args.ready, {"victim": victim, "group": group, "coordinator": coordinator, "leaders": data_leaders,
                                "victim_partitions": victim_partitions, "offsets_leaders": offsets_leaders})
        wait_file(args.killed, 30, f"the test creating {args.killed} after SIGKILLing broker {victim}", run)
        killed_at = now()
        with run.lock:
            run.phase, run.marks["killed"] = "killed", since(killed_at)
            confirmed_at_kill = len(run.confirmed)

        # Recovery: confirmations after the kill where the victim mattered, and metadata showing
        # the victim's roles taken over.
        reached = {}
        recovery = Deadline(args.recovery_s_max, f"recovery after broker {victim} (--kill {args.kill}) was killed")
        last_md = None
        while True:
            expect(not run.problems, f"{len(run.problems)} problems, first: {run.problems[:5]}")
            after = run.confirmed_after(killed_at, watched)
            if "confirmed" not in reached and min(after.values()) >= args.recovered_after:
                reached["confirmed"] = round(now() - killed_at, 3)
            if "moved" not in reached:
                if args.kill == "leader":
                    md = topic_leaders(admin, topic, timeout=1)
                    last_md = md
                    if not isinstance(md, str) and all(md[p][0] not in (-1, victim) for p in victim_partitions):
                        reached["moved"] = round(now() - killed_at, 3)
                        reached["new_leaders"] = {p: md[p][0] for p in victim_partitions}
                else:
                    md = topic_leaders(admin, offsets_topic, timeout=1)
                    last_md = md
                    if not isinstance(md, str):
                        c = md[partition_for(group, len(md))][0]
                        if c not in (-1, victim):
                            reached["moved"] = round(now() - killed_at, 3)
                            reached["new_coordinator"] = c
            if "confirmed" in reached and "moved" in reached:
                break
            recovery.check(f"reached {reached}; confirmed after the kill per watched partition {after}; metadata {last_md}; "
                           f"{progress()}")
            time.sleep(0.05)
        with run.lock:
            confirmed_at_recovered = len(run.confirmed)
        expect(confirmed_at_recovered < n, f"all {n} records confirmed before the restart: nothing left for after it")
        write_json(args.recovered, reached)
        wait_file(args.restarted, 40, f"the test creating {args.restarted} after restarting broker {victim}", run)
        restarted_at = now()
        with run.lock:
            run.phase, run.marks["restarted"] = "restarted", since(restarted_at)

        # To the end.
        def finished():
            with run.lock:
                if len(run.confirmed) == n:
                    return True
                if any(i not in run.acked for i in range(n)):
                    return False
                last = max((d[0] for d in run.deliveries), default=t0)
            return now() - last >= args.tail_s

        drive(Deadline(60, "consuming to the end after the restart"), finished)
    finally:
        run.stop.set()
        for t in threads:
            t.join(30)
    expect(not any(t.is_alive() for t in threads), "a member thread did not end within 30 s of the stop")
    expect(not run.problems, f"{len(run.problems)} problems, first: {run.problems[:5]}")
    consumed_s = round(now() - t0, 3)

    resolved, late = drain(run, args, partitions)

    deliveries, redelivered, unknown = check(run, n, args.delivery_count_max, since)
    idle = [name for name in names if not run.per_member.get(name)]
    expect(not idle, f"members {idle} were handed no records (per member {run.per_member})")
    with run.lock:
        confirmed_after_restart = sum(1 for (t, _, _, _) in run.confirmed.values() if t > restarted_at)
        confirmed_times = sorted(t for (t, _, _, _) in run.confirmed.values() if t > killed_at)
    expect(confirmed_after_restart > 0, "no acceptance was confirmed after the killed broker was restarted")
    # Both members still in the group after the failover (members rejoin a new coordinator).
    handed_after = {name: sum(1 for d in deliveries if d[1] == name and d[0] > restarted_at) for name in names}
    expect(all(handed_after.values()), f"a member was handed nothing after the restart: {handed_after}")
    # The longest time after the kill with no confirmation at all: how long the failure stalled
    # the group.
    stall = max((b - a for a, b in zip([killed_at] + confirmed_times, confirmed_times)), default=0.0)
    hist = {}
    for (_, _, _, _, _, dc, _) in deliveries:
        hist[dc] = hist.get(dc, 0) + 1
    phases = {}
    for (_, _, _, phase) in run.confirmed.values():
        phases[phase] = phases.get(phase, 0) + 1
    how = {}
    for (_, _, h, _) in run.confirmed.values():
        how[h] = how.get(h, 0) + 1
    summary = {
        "kill": args.kill, "victim": victim, "victim_partitions": victim_partitions, "group": group,
        "coordinator": coordinator, "data_leaders": data_leaders, "offsets_leaders": offsets_leaders,
        "recovered_s": max(reached["confirmed"], reached["moved"]), "reached_s": reached,
        "marks_s": run.marks, "consumed_s": consumed_s, "n": n, "stall_s": round(stall, 3),
        "handed_after_restart": handed_after,
        "deliveries": len(deliveries), "per_member": run.per_member,
        "confirmed": {"at_ready": confirmed_at_ready, "at_kill": confirmed_at_kill, "at_recovered": confirmed_at_recovered,
                      "total": len(run.confirmed), "by_phase": phases, "by": how, "after_restart": confirmed_after_restart},
        "redelivered_before_confirmation": len(redelivered),
        "redelivered_sample": {i: [(since(t), w, dc) for t, w, dc, _ in ds] for i, ds in sorted(redelivered.items())[:3]},
        "unknown_outcome_not_redelivered": len(unknown), "unknown_sample": {i: run.unconfirmed_acks.get(i, [])[-1:] for i in unknown[:3]},
        "drain_resolved": len(resolved), "drain_confirmed_records": len(late),
        "delivery_counts": {str(k): v for k, v in sorted(hist.items())},
        "commit_errors": dict(sorted(run.commit_errors.items(), key=lambda kv: -kv[1])[:8]),
        "events": [(since(t), m, w) for t, m, w in run.events[:12]],
    }
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main(run_test)
