#!/usr/bin/env python3
"""A share group's start offsets moved back by the operator (confluent-kafka ShareConsumer; the
offsets themselves are set with `seedlog groups alter-share-offsets` by the Rust test between
the phases, since confluent-kafka 2.16 has no share-group offsets admin calls).

--phase first (a fresh broker): creates a 2-partition topic, sets the group's
  share.auto.offset.reset to earliest, produces N records. One ShareConsumer in explicit mode
  ACCEPTs every record, each handed out once, commits and closes (the group is then empty).
--phase again (after the test set every partition's start offset back to 0): a new member of
  the same group must be handed every one of the N records again, each once, at delivery count
  1: the altered share-partitions start at 0 with nothing in flight, so what the first member
  accepted is handed out anew, and no leader's write of the old state undid the change.

Prints one summary line on stdout per phase.
"""

import json

from common import Deadline, fail, main, share_args
from share_group import PARTITIONS, produce, setup
from share_group_delete import consume_all


def first(args):
    deadline = Deadline(60, "phase first")
    setup(args.bootstrap, args.topic, args.group, deadline)
    placed = produce(args.bootstrap, args.topic, [str(i) for i in range(args.n)], lambda i: i % PARTITIONS, deadline)
    seen = consume_all(args.bootstrap, args.topic, args.group, "share-first", placed, deadline, args.debug)
    with open(args.state, "w") as f:
        json.dump({"placed": {v: list(po) for v, po in placed.items()}}, f)
    print(f"first: all {len(seen)} records accepted, each handed out once")


def again(args):
    with open(args.state) as f:
        placed = {v: tuple(po) for v, po in json.load(f)["placed"].items()}
    deadline = Deadline(60, "phase again")
    seen = consume_all(args.bootstrap, args.topic, args.group, "share-again", placed, deadline, args.debug)
    counts = sorted(set(seen.values()))
    if counts != [1]:
        fail(f"again: records handed out at delivery counts {counts} after the start offsets were set back, expected only 1")
    print(f"again: after the start offsets were set back to 0, all {len(seen)} records were handed out again, "
          f"each once at delivery count 1")


def run():
    phases = {"first": first, "again": again}
    args = share_args(__doc__, 400, phases, "JSON file: written by the first phase, read by the second")
    phases[args.phase](args)


if __name__ == "__main__":
    main(run)
