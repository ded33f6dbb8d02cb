#!/usr/bin/env python3
"""DeleteGroups of a share group, across a broker restart (confluent-kafka ShareConsumer and
AdminClient.delete_consumer_groups).

--phase before (a fresh broker): creates a 2-partition topic, sets the group's
  share.auto.offset.reset to earliest, produces N records. One ShareConsumer in explicit mode
  ACCEPTs every record and commits; while it is still a member, delete_consumer_groups must fail
  with NON_EMPTY_GROUP. Then it closes (and leaves the group).
--phase after (a new broker process on the same data directory): the group, empty, is still
  known, so delete_consumer_groups succeeds; a second deletion is GROUP_ID_NOT_FOUND. A new
  member of a group of the same name (share.auto.offset.reset set to earliest again) must be
  handed every one of the N records again, each once, at delivery count 1: the deleted group's
  share-partition states (everything accepted) went with it. Deleted once more, now without a
  restart (the partition leader still holds the state in memory), a third incarnation is again
  handed every record at delivery count 1.

Prints one summary line on stdout per phase.
"""

import json
import time

from confluent_kafka import AcknowledgeType, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from common import Deadline, expect, fail, main, share_reset_earliest, share_args
from share_group import PARTITIONS, AckCallback, commit, produce, setup, share_consumer

# How long a deletion may be retried while the restarted coordinator loads its partition.
DELETE_RETRY_S = 30.0


def delete(bootstrap, group):
    """delete_consumer_groups([group]): None on success, else the KafkaError code. Retries while
    the coordinator is loading or moving (librdkafka passes those through)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    give_up = time.monotonic() + DELETE_RETRY_S
    retriable = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE}
    while True:
        try:
            admin.delete_consumer_groups([group], request_timeout=20)[group].result(timeout=25)
            return None
        except KafkaException as e:
            code = e.args[0].code()
            if code not in retriable or time.monotonic() > give_up:
                return code
            time.sleep(0.5)


def consume_all(bootstrap, topic, group, name, placed, deadline, debug, while_member=None):
    """One member ACCEPTs records until every value of `placed` was handed to it once; returns
    {(partition, offset): delivery count}. `while_member()` runs before it closes."""
    want = set(placed.values())
    consumer = share_consumer(bootstrap, group, name, debug, poll_records=len(placed))
    acks = AckCallback(topic)
    consumer.set_acknowledgement_commit_callback(acks)
    seen = {}
    try:
        consumer.subscribe([topic])
        while not want <= set(seen):
            deadline.check(f"{name}: {len(seen)} of the {len(want)} records handed out")
            for m in consumer.poll(0.5):
                expect(m.error() is None, f"{name}: poll error {m.error()}")
                value, where, dc = m.value().decode(), (m.partition(), m.offset()), m.delivery_count()
                expect(placed.get(value) == where, f"{name}: value {value!r} handed from {where}, produced at {placed.get(value)}")
                expect(where not in seen, f"{name}: partition {where[0]} offset {where[1]} handed twice (delivery counts "
                                          f"{seen.get(where)} then {dc}) though accepted the first time")
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                seen[where] = dc
        commit(consumer, name)
        if while_member is not None:
            while_member()
    finally:
        consumer.close()
    expect(not acks.errors, f"{name}: acknowledgement callback errors {acks.errors[:3]}")
    unconfirmed = sorted(set(seen) - acks.confirmed)
    expect(not unconfirmed, f"{name}: {len(unconfirmed)} acknowledgements never confirmed, first {unconfirmed[:10]}")
    return seen


def before(args):
    deadline = Deadline(60, "phase before")
    setup(args.bootstrap, args.topic, args.group, deadline)
    placed = produce(args.bootstrap, args.topic, [str(i) for i in range(args.n)], lambda i: i % PARTITIONS, deadline)

    def refused():
        code = delete(args.bootstrap, args.group)
        expect(code == KafkaError.NON_EMPTY_GROUP, f"before: deleting share group {args.group!r} with a member answered "
                                                   f"{code!r}, expected NON_EMPTY_GROUP")

    seen = consume_all(args.bootstrap, args.topic, args.group, "share-before", placed, deadline, args.debug, refused)
    with open(args.state, "w") as f:
        json.dump({"placed": {v: list(po) for v, po in placed.items()}}, f)
    print(f"before: {len(seen)} records accepted; deleting the group while it had a member was NON_EMPTY_GROUP")


def after(args):
    with open(args.state) as f:
        placed = {v: tuple(po) for v, po in json.load(f)["placed"].items()}
    deadline = Deadline(60, "phase after")
    code = delete(args.bootstrap, args.group)
    expect(code is None, f"after: deleting the empty share group {args.group!r} after the restart answered {code!r}")
    code = delete(args.bootstrap, args.group)
    expect(code == KafkaError.GROUP_ID_NOT_FOUND, f"after: deleting {args.group!r} a second time answered {code!r}, "
                                                  f"expected GROUP_ID_NOT_FOUND")
    share_reset_earliest(AdminClient({"bootstrap.servers": args.bootstrap}), args.group)
    seen = consume_all(args.bootstrap, args.topic, args.group, "share-recreated", placed, deadline, args.debug)
    counts = sorted(set(seen.values()))
    if counts != [1]:
        fail(f"after: the re-created group was handed records at delivery counts {counts}, expected only 1 (a fresh start)")
    code = delete(args.bootstrap, args.group)
    expect(code is None, f"after: deleting the re-created group (its states held by a running leader) answered {code!r}")
    share_reset_earliest(AdminClient({"bootstrap.servers": args.bootstrap}), args.group)
    again = consume_all(args.bootstrap, args.topic, args.group, "share-recreated-again", placed, deadline, args.debug)
    counts = sorted(set(again.values()))
    if counts != [1]:
        fail(f"after: the group re-created a second time was handed records at delivery counts {counts}, expected only 1")
    print(f"after: the empty group was deleted (then GROUP_ID_NOT_FOUND); a group re-created under its name was handed "
          f"all {len(seen)} records again, each once at delivery count 1, and so was one re-created after a second "
          f"deletion without a restart")


def run():
    phases = {"before": before, "after": after}
    args = share_args(__doc__, 400, phases, "JSON file: written before the restart, read after it")
    phases[args.phase](args)


if __name__ == "__main__":
    main(run)
