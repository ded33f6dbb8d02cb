#!/usr/bin/env python3
"""A share session ends when its connection closes (confluent-kafka ShareConsumer).

A first member (a child process) acquires the N records of a 1-partition topic and is killed
(SIGKILL: it never acknowledges, never closes its session, never leaves the group; the kernel
closes its connections). A second member must be handed the same N records at delivery count 2
within DISCONNECT_WAIT_MAX_S: the broker gave them back when the first member's connection
closed, not when their locks (the broker's 30 s) ran out nor when its session would have
expired unused (45 s).

Prints one summary line on stdout.
"""

import os
import signal
import time

from confluent_kafka.admin import AdminClient

from common import Deadline, expect, main, share_args
from share_group import commit, share_consumer
from share_group_configs import create, produce, set_group_config, take

# Well under the 30 s lock: a join and a few polls.
DISCONNECT_WAIT_MAX_S = 15.0


def run():
    args = share_args(__doc__, 50)
    deadline = Deadline(60, "a share session ending with its connection")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    create(admin, args.topic, deadline)
    set_group_config(admin, args.group, "share.auto.offset.reset", "earliest")
    want = set(produce(args.bootstrap, args.topic, [f"r{i}" for i in range(args.n)]).values())

    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ready_r)
        consumer = share_consumer(args.bootstrap, args.group, "share-killed", args.debug, poll_records=args.n)
        consumer.subscribe([args.topic])
        try:
            take(consumer, want, deadline, "first member", accept=False)
            os.write(ready_w, b"held")
        except Exception as e:  # noqa: BLE001 - the parent reports it
            os.write(ready_w, f"fail {e}".encode())
        os.kill(os.getpid(), signal.SIGKILL)
    os.close(ready_w)
    said = os.read(ready_r, 4096).decode()
    os.waitpid(child, 0)
    expect(said == "held", f"first member: {said or 'died without acquiring the records'}")
    killed_at = time.monotonic()
    consumer = share_consumer(args.bootstrap, args.group, "share-after-kill", args.debug, poll_records=args.n)
    try:
        consumer.subscribe([args.topic])
        seen = take(consumer, want, deadline, "second member", accept=True)
        waited = time.monotonic() - killed_at
        commit(consumer, "second member")
    finally:
        consumer.close()
    counts = sorted(set(seen.values()))
    expect(counts == [2], f"second member: delivery counts {counts}, expected 2 (each record's second delivery)")
    expect(waited <= DISCONNECT_WAIT_MAX_S, f"second member: handed the records {waited:.1f} s after the first member "
                                            f"was killed; its locks (30 s) ran out instead of its connection closing")
    print(f"the killed member's {len(want)} records came back {waited:.1f} s after its connection closed, at delivery count 2")


if __name__ == "__main__":
    main(run)
