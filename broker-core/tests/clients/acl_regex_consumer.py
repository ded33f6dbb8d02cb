#!/usr/bin/env python3
"""A KIP-848 regex subscription under ACLs with confluent-kafka (`group.protocol=consumer`), on a
broker whose authorizer is on (StandardAuthorizer, super user admin, nothing allowed without an
ACL), over SASL_PLAINTEXT with SCRAM. As admin: adds user alice, creates topics `a-one` (2
partitions), `a-two` and `b-one` (1 each) with three records each, and gives alice READ on group
`rx` and on the topics prefixed `a-`. Alice subscribes to `^.*` in `rx`: she is assigned a-one's
and a-two's partitions and, over several heartbeats, never b-one, which the regex matches but
she may not DESCRIBE (Kafka 4's KAFKA-18813). Admin then gives her READ on `b-one`: it joins her
assignment at a later heartbeat and she reads its records. Each time admin's
describe_consumer_groups() shows the broker's view too (librdkafka leaves out of `assignment()`
a topic it cannot describe, so the broker's own assignment and target are what is checked).
"""

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from common import Deadline, acl_start, expect, main, scram_login

# Longer than the broker's heartbeat interval (group.consumer.heartbeat.interval.ms, 5 s), so
# alice heartbeats more than once while she is watched.
watch_s = 12


def described(admin):
    """The one member's (assignment, target assignment) as the broker describes group `rx`."""
    d = admin.describe_consumer_groups(["rx"], request_timeout=30)["rx"].result(30)
    expect(len(d.members) == 1, f"rx's members: {d.members}")
    m = d.members[0]
    return (sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions),
            sorted((tp.topic, tp.partition) for tp in m.target_assignment.topic_partitions))


def run():
    topics = {"a-one": 2, "a-two": 1, "b-one": 1}
    args, admin_config, admin = acl_start(__doc__, topics)
    p = Producer({**admin_config, "acks": "all"})
    for t, n in topics.items():
        for i in range(3):
            p.produce(t, value=f"{t}-{i}", partition=i % n)
    expect(p.flush(30) == 0, "admin's records delivered")
    user = "User:alice"
    acls = [
        AclBinding(ResourceType.GROUP, "rx", ResourcePatternType.LITERAL, user, "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "a-", ResourcePatternType.PREFIXED, user, "*", AclOperation.READ, AclPermissionType.ALLOW),
    ]
    for binding, f in admin.create_acls(acls, request_timeout=30).items():
        expect(f.result(30) is None, f"creating {binding}")

    alice = Consumer({**scram_login(args.bootstrap, "alice", "alice-secret"), "group.id": "rx", "group.protocol": "consumer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    alice.subscribe(["^.*"])
    read = set()

    def poll_until(deadline, done):
        while not done():
            deadline.check(f"alice holds {held()}, read {sorted(read)}")
            for m in alice.consume(num_messages=10, timeout=0.2):
                expect(m.error() is None, f"alice: {m.error()}")
                read.add(m.value().decode())

    def held():
        return sorted((tp.topic, tp.partition) for tp in alice.assignment())

    a_only = [("a-one", 0), ("a-one", 1), ("a-two", 0)]
    poll_until(Deadline(60, "alice assigned the a- topics"), lambda: held() == a_only)
    watched = time.monotonic() + watch_s
    poll_until(Deadline(watch_s + 30, "watching alice's assignment"), lambda: time.monotonic() > watched or held() != a_only)
    expect(held() == a_only, f"alice holds {held()}: b-one matches `^.*` but she may not describe it")
    expect(not any(r.startswith("b-") for r in read), f"alice read {sorted(read)}")
    expect(described(admin) == (a_only, a_only), f"the broker's view of alice: {described(admin)}")

    binding = AclBinding(ResourceType.TOPIC, "b-one", ResourcePatternType.LITERAL, user, "*", AclOperation.READ, AclPermissionType.ALLOW)
    expect(list(admin.create_acls([binding], request_timeout=30).values())[0].result(30) is None, "giving alice b-one")
    poll_until(Deadline(60, "b-one joining alice's assignment"), lambda: ("b-one", 0) in held() and {f"b-one-{i}" for i in range(3)} <= read)
    with_b = sorted(a_only + [("b-one", 0)])
    expect(held() == with_b, f"alice holds {held()}")
    expect(described(admin) == (with_b, with_b), f"the broker's view of alice: {described(admin)}")
    alice.close()
    print(f"regex `^.*` under ACLs: alice held {a_only} while she could not describe b-one, then b-one too; read {len(read)} records")


if __name__ == "__main__":
    main(run)
