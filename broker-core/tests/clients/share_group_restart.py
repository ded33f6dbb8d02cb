#!/usr/bin/env python3
"""A share group's acknowledgements survive a broker restart (confluent-kafka ShareConsumer).

--phase before (a fresh broker): creates a 2-partition topic, sets the group's
  share.auto.offset.reset to earliest, produces N records (values str(i), partition i % 2). One
  ShareConsumer in explicit mode ACCEPTs exactly the first half of each partition by offset and
  RELEASEs every other record it is handed, until the whole first half is accepted; then
  commit_sync (no error), close. Writes the produced placement, the halves and what it released
  (with the delivery count it was released at) to the --state file.
--phase after (a new broker process on the same data directory): a new member of the group
  must be handed exactly the second half of each partition, each record once, and none of the
  accepted first half. A record released before the restart comes back with a delivery count
  above the one it was released at (so at least 2); the broker kept that too. It ACCEPTs
  everything, polls 2 s more for redeliveries, commits (no error) and closes; then a further
  member must be handed nothing but one sentinel per partition (share_group.expect_drained).

Prints one summary line on stdout per phase.
"""

import json
import time

from confluent_kafka import AcknowledgeType

from common import Deadline, expect, main, share_args
from share_group import PARTITIONS, TAIL_S, AckCallback, commit, expect_drained, produce, setup, share_consumer

# Before the restart, records of the second half are released each time they are handed out
# and may be handed out again while the first half is still being accepted. Each round adds one
# to their delivery count, and at group.share.delivery.count.limit (5) a record would be
# archived: this phase stops well short of it, or fails saying so. Its member asks for every
# record at once (ShareFetch's MaxRecords = N), so few rounds are needed.
BEFORE_DELIVERY_COUNT_MAX = 3


def before(args):
    deadline = Deadline(60, "phase before")
    partitions = setup(args.bootstrap, args.topic, args.group, deadline)
    placed = produce(args.bootstrap, args.topic, [str(i) for i in range(args.n)], lambda i: i % PARTITIONS, deadline)
    counts = {p: sum(1 for q, _ in placed.values() if q == p) for p in partitions}
    half = {p: counts[p] // 2 for p in partitions}
    want = {(p, o) for p in partitions for o in range(half[p])}

    consumer = share_consumer(args.bootstrap, args.group, "share-before", args.debug, poll_records=args.n)
    acks = AckCallback(args.topic)
    consumer.set_acknowledgement_commit_callback(acks)
    accepted, released, acked = set(), {}, set()
    try:
        consumer.subscribe([args.topic])
        while not want <= accepted:
            deadline.check(f"{len(accepted & want)} of the {len(want)} first-half records accepted")
            for m in consumer.poll(0.5):
                expect(m.error() is None, f"before: poll error {m.error()}")
                value, where, dc = m.value().decode(), (m.partition(), m.offset()), m.delivery_count()
                expect(placed.get(value) == where, f"before: value {value!r} handed from {where}, produced at {placed.get(value)}")
                expect(where not in accepted, f"before: partition {where[0]} offset {where[1]} handed again (delivery count "
                                              f"{dc}) after it was accepted")
                expect(1 <= dc <= BEFORE_DELIVERY_COUNT_MAX,
                       f"before: partition {where[0]} offset {where[1]} handed with delivery count {dc}")
                if where in want:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    accepted.add(where)
                else:
                    consumer.acknowledge(m, AcknowledgeType.RELEASE)
                    released[where] = dc
                acked.add(where)
        answered = commit(consumer, "before")
        expect(set(answered) <= set(partitions), f"before: commit_sync answered for partitions {sorted(answered)}")
    finally:
        consumer.close()
    expect(not acks.errors, f"before: acknowledgement callback errors {acks.errors[:3]}")
    unconfirmed = sorted(acked - acks.confirmed)
    expect(not unconfirmed, f"before: {len(unconfirmed)} acknowledgements never confirmed, first {unconfirmed[:10]}")

    state = {
        "topic": args.topic,
        "half": {str(p): h for p, h in half.items()},
        "counts": {str(p): c for p, c in counts.items()},
        "placed": {v: list(po) for v, po in placed.items()},
        "released": [[p, o, dc] for (p, o), dc in sorted(released.items())],
    }
    with open(args.state, "w") as f:
        json.dump(state, f)
    print(f"before: {args.n} records; accepted the first half {half} of each partition; released "
          f"{len(released)} records of the second half (highest delivery count {max(released.values(), default=0)})")


def after(args):
    with open(args.state) as f:
        state = json.load(f)
    half = {int(p): h for p, h in state["half"].items()}
    counts = {int(p): c for p, c in state["counts"].items()}
    placed = {v: tuple(po) for v, po in state["placed"].items()}
    released = {(p, o): dc for p, o, dc in state["released"]}
    partitions = sorted(half)
    want = {(p, o) for p in partitions for o in range(half[p], counts[p])}

    deadline = Deadline(60, "phase after")
    consumer = share_consumer(args.bootstrap, args.group, "share-restarted", args.debug)
    acks = AckCallback(args.topic)
    consumer.set_acknowledgement_commit_callback(acks)
    seen = {}
    try:
        consumer.subscribe([args.topic])
        done_at = None
        while done_at is None or time.monotonic() - done_at < TAIL_S:
            deadline.check(f"{len(seen)} of the {len(want)} second-half records handed out")
            for m in consumer.poll(0.5):
                expect(m.error() is None, f"after: poll error {m.error()}")
                value, where, dc = m.value().decode(), (m.partition(), m.offset()), m.delivery_count()
                expect(placed.get(value) == where, f"after: value {value!r} handed from {where}, produced at {placed.get(value)}")
                expect(where in want, f"after: partition {where[0]} offset {where[1]} (first half, accepted before the restart) "
                                      f"handed again with delivery count {dc}")
                expect(where not in seen, f"after: partition {where[0]} offset {where[1]} handed twice (delivery counts "
                                          f"{seen.get(where)} then {dc}) though accepted the first time")
                if where in released:
                    expect(dc > released[where], f"after: partition {where[0]} offset {where[1]} released at delivery count "
                                                 f"{released[where]} before the restart, handed with delivery count {dc}")
                else:
                    expect(dc >= 1, f"after: partition {where[0]} offset {where[1]} handed with delivery count {dc}")
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                seen[where] = dc
            if done_at is None and want <= set(seen):
                done_at = time.monotonic()
        commit(consumer, "after")
    finally:
        consumer.close()
    expect(not acks.errors, f"after: acknowledgement callback errors {acks.errors[:3]}")
    unconfirmed = sorted(set(seen) - acks.confirmed)
    expect(not unconfirmed, f"after: {len(unconfirmed)} acknowledgements never confirmed, first {unconfirmed[:10]}")
    expect_drained(args.bootstrap, args.topic, args.group, partitions, args.debug)
    counts_seen = {}
    for dc in seen.values():
        counts_seen[dc] = counts_seen.get(dc, 0) + 1
    print(f"after: handed exactly the second half ({len(seen)} records), each once; {len(released)} released before "
          f"the restart came back with a higher delivery count; delivery counts {dict(sorted(counts_seen.items()))}; "
          f"a further member was handed nothing")


def run():
    phases = {"before": before, "after": after}
    args = share_args(__doc__, 1000, phases, "JSON file: written before the restart, read after it")
    phases[args.phase](args)


if __name__ == "__main__":
    main(run)
