#!/usr/bin/env python3
"""ACLs with real clients on a broker whose authorizer is on (StandardAuthorizer, super user
admin, allow.everyone.if.no.acl.found off), over SASL_PLAINTEXT with SCRAM. As admin,
confluent-kafka's AdminClient adds user alice, creates three topics and, after alice is seen
refused everything, creates ACLs: WRITE on topic `orders` (literal), READ on topics prefixed
`pay`, DENY READ on `payments-secret`, READ on group `g1`. Then alice: produces to `orders` and
is refused `payments` (TOPIC_AUTHORIZATION_FAILED); sees only the topics she may describe;
consumes `payments` in group g1 and commits; is refused `payments-secret` (deny wins over the
prefix's allow) and group g2 (GROUP_AUTHORIZATION_FAILED); lists only g1 of the groups (admin
lists admin's too) and is refused `orders`' configs (TOPIC_AUTHORIZATION_FAILED); cannot list or create ACLs
(CLUSTER_AUTHORIZATION_FAILED, DescribeAcls seen through kafka-python). Admin describes the four ACLs, deletes the WRITE one, and
alice is refused `orders` again.
"""


from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)

from common import Deadline, acl_start, expect, fail, main, scram_login


def produce(config, topic, n=5):
    """Produces n records; the error codes the deliveries report (empty: all delivered)."""
    p = Producer({**config, "acks": "all", "retries": 0, "message.timeout.ms": 10000})
    errors = []
    for i in range(n):
        p.produce(topic, value=f"{topic}-{i}", partition=0, on_delivery=lambda err, _m: err and errors.append(err.code()))
    p.flush(20)
    return errors


def consume(config, topic, group, n):
    """Reads n records of `topic` from the start in `group` and commits; or the error met."""
    c = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, deadline = [], Deadline(30, f"reading {topic} in {group}")
    try:
        while len(got) < n:
            if deadline.left() <= 0:
                return f"read {len(got)} of {n}"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return m.error().code()
            got.append(m.value().decode())
        c.commit(asynchronous=False)
        return got
    except KafkaException as e:
        return e.args[0].code()
    finally:
        c.close()


def run():
    topics = ["orders", "payments", "payments-secret"]
    args, admin_config, admin = acl_start(__doc__, {t: 1 for t in topics})
    for t in ["payments", "payments-secret"]:
        expect(produce(admin_config, t) == [], f"admin produces to {t}")
    alice = scram_login(args.bootstrap, "alice", "alice-secret")

    # No ACLs yet: alice may do nothing.
    expect(produce(alice, "orders") == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 5, "alice writes with no ACL")
    seen = set(AdminClient(alice).list_topics(timeout=10).topics)
    expect(not seen & set(topics), f"alice sees {seen} with no ACL")

    user = "User:alice"
    acls = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, user, "*", AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, user, "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "payments-secret", ResourcePatternType.LITERAL, user, "*", AclOperation.READ, AclPermissionType.DENY),
        AclBinding(ResourceType.GROUP, "g1", ResourcePatternType.LITERAL, user, "*", AclOperation.READ, AclPermissionType.ALLOW),
    ]
    for binding, f in admin.create_acls(acls, request_timeout=30).items():
        expect(f.result(30) is None, f"creating {binding}")

    expect(produce(alice, "orders") == [], "alice writes orders with WRITE")
    expect(produce(alice, "payments") == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 5, "alice writes payments with READ only")
    seen = set(AdminClient(alice).list_topics(timeout=10).topics)
    expect(seen == set(topics), f"alice describes {seen}: WRITE and READ imply DESCRIBE")
    got = consume(alice, "payments", "g1", 5)
    expect(got == [f"payments-{i}" for i in range(5)], f"alice reads payments in g1: {got}")
    committed = Consumer({**alice, "group.id": "g1"}).committed([TopicPartition("payments", 0)], timeout=10)
    expect(committed[0].offset == 5, f"g1's committed offset: {committed}")
    got = consume(alice, "payments-secret", "g1", 5)
    expect(got == KafkaError.TOPIC_AUTHORIZATION_FAILED, f"alice reads payments-secret: {got}")
    got = consume(alice, "payments", "g2", 5)
    expect(got == KafkaError.GROUP_AUTHORIZATION_FAILED, f"alice reads in g2: {got}")
    expect(consume(admin_config, "payments", "admins", 5) == [f"payments-{i}" for i in range(5)], "admin reads in group admins")

    # Listings and configs: only what each may describe.
    def groups(config):
        client = AdminClient(config)  # held: a handle destroyed early fails its futures
        return sorted(g.group_id for g in client.list_consumer_groups(request_timeout=10).result(10).valid)
    expect(groups(admin_config) == ["admins", "g1"], f"admin lists {groups(admin_config)}")
    expect(groups(alice) == ["g1"], f"alice lists {groups(alice)}: READ on g1 implies DESCRIBE, nothing on admins")
    from confluent_kafka.admin import ConfigResource
    alice_client = AdminClient(alice)
    described = alice_client.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "orders")], request_timeout=10)
    refused = list(described.values())[0].exception(10)
    expect(refused is not None and refused.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, f"alice describing orders' configs: {refused}")
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "orders")], request_timeout=10)
    expect("retention.ms" in list(described.values())[0].result(10), "admin describes orders' configs")

    alice_admin = AdminClient(alice)
    # kafka-python, because librdkafka drops DescribeAcls' top-level error (its result is []).
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient, ResourcePatternFilter
    from kafka.admin import ResourceType as KResourceType
    from kafka.errors import ClusterAuthorizationFailedError
    k = KafkaAdminClient(bootstrap_servers=args.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                         sasl_plain_username="alice", sasl_plain_password="alice-secret")
    try:
        listed = k.describe_acls(ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                                           ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY)))
        fail(f"alice listed the ACLs: {listed}")
    except ClusterAuthorizationFailedError:
        pass
    k.close()
    refused = list(alice_admin.create_acls(acls[:1], request_timeout=10).values())[0].exception(10)
    expect(refused is not None and refused.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED, f"alice creating an ACL: {refused}")

    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    described = admin.describe_acls(everything, request_timeout=30).result(30)
    expect(sorted(map(str, described)) == sorted(map(str, acls)), f"described: {described}")
    write = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, user, "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    deleted = list(admin.delete_acls([write], request_timeout=30).values())[0].result(30)
    expect(len(deleted) == 1, f"deleted: {deleted}")
    expect(produce(alice, "orders") == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 5, "alice writes orders after its ACL went")
    print("ACLs: allow, prefix, deny-wins, group and cluster checks hold for alice; admin created, described and deleted them")


if __name__ == "__main__":
    main(run)
