#!/usr/bin/env python3
"""Real clients authenticating to a SASL_PLAINTEXT listener, with the credentials the broker
was started with (`--add-scram`): confluent-kafka (librdkafka) with SCRAM-SHA-256,
SCRAM-SHA-512 and PLAIN produces and reads back; kafka-python with SCRAM-SHA-256 and PLAIN
does too; a wrong password, an unknown user and a client that does not authenticate at all
are refused. Then confluent-kafka's AdminClient adds a user (AlterUserScramCredentials), who
authenticates; describes the users (DescribeUserScramCredentials); is refused iterations out
of range; and deletes the user, who is refused from then on.
"""

import argparse

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from common import Deadline, expect, fail, main


def auth(mechanism, user, password):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}


def confluent_roundtrip(bootstrap, topic, mechanism, user, password, n=20):
    confluent_roundtrip_with(bootstrap, topic, mechanism, auth(mechanism, user, password), n)


def confluent_roundtrip_with(bootstrap, topic, label, settings, n=20):
    """confluent-kafka with `settings` (security) produces n records with acks=all and reads
    them back from the first one's offset."""
    config = {"bootstrap.servers": bootstrap, **settings}
    p = Producer({**config, "acks": "all"})
    delivered, errors = [], []
    for i in range(n):
        p.produce(topic, value=f"{label}-{i}", on_delivery=lambda err, msg: (errors if err else delivered).append(err or msg.offset()))
    p.flush(30)
    expect(not errors and len(delivered) == n, f"confluent-kafka {label}: delivered {len(delivered)} of {n}, errors {errors[:3]}")
    c = Consumer({**config, "group.id": f"roundtrip-{label}", "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, min(delivered))])
    got, deadline = [], Deadline(30, f"confluent-kafka {label} reading back")
    while len(got) < n:
        deadline.check(f"read {len(got)} of {n}")
        m = c.poll(0.5)
        if m is None or (m.error() and m.error().code() == -191):  # _PARTITION_EOF
            continue
        if m.error():
            fail(f"confluent-kafka {label} consumer: {m.error()}")
        if m.value().decode().startswith(f"{label}-"):
            got.append(m.value().decode())
    c.close()
    expect(got == [f"{label}-{i}" for i in range(n)], f"confluent-kafka {label} read {got}")


def refused(bootstrap, config, what):
    """A client that must not get metadata: its list_topics fails."""
    p = Producer({"bootstrap.servers": bootstrap, **config})
    try:
        p.list_topics(timeout=4)
    except KafkaException as e:
        return str(e)
    fail(f"{what}: the broker answered Metadata")


def kafka_python_roundtrip(bootstrap, topic, mechanism, user, password):
    kafka_python_roundtrip_with(bootstrap, topic, mechanism, dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                                                                   sasl_plain_username=user, sasl_plain_password=password))


def kafka_python_roundtrip_with(bootstrap, topic, label, security):
    """kafka-python with `security` (its keyword settings) produces one record and reads it back."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    settings = dict(bootstrap_servers=bootstrap, **security)
    producer = KafkaProducer(acks="all", **settings)
    offset = producer.send(topic, value=f"kafka-python-{label}".encode(), partition=0).get(timeout=30).offset
    producer.close()
    consumer = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=5000, **settings)
    tp = KTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, offset)
    values = [m.value for m in consumer]
    consumer.close()
    expect(values[:1] == [f"kafka-python-{label}".encode()], f"kafka-python {label} read {values[:3]}")


def users(bootstrap, topic):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)

    admin = AdminClient({"bootstrap.servers": bootstrap, **auth("SCRAM-SHA-256", "admin", "admin-secret")})

    def alter(alterations):
        return {user: f.exception(timeout=30) for user, f in admin.alter_user_scram_credentials(alterations).items()}

    added = alter([UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret")])
    expect(added == {"alice": None}, f"adding alice: {added}")
    confluent_roundtrip(bootstrap, topic, "SCRAM-SHA-512", "alice", "alice-secret", n=5)
    described = admin.describe_user_scram_credentials().result(timeout=30)
    infos = {user: sorted((str(i.mechanism), i.iterations) for i in d.scram_credential_infos) for user, d in described.items()}
    expect(infos.get("alice") == [("ScramMechanism.SCRAM_SHA_512", 8192)] and len(infos.get("admin", [])) == 2, f"described: {infos}")
    weak = alter([UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"bob")])
    expect(weak["bob"] is not None and "UNACCEPTABLE_CREDENTIAL" in str(weak["bob"]), f"100 iterations: {weak}")
    gone = alter([UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_512)])
    expect(gone == {"alice": None}, f"deleting alice: {gone}")
    return refused(bootstrap, auth("SCRAM-SHA-512", "alice", "alice-secret"), "a deleted user")


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    args = ap.parse_args()
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]:
        confluent_roundtrip(args.bootstrap, args.topic, mechanism, "admin", "admin-secret")
    for mechanism in ["SCRAM-SHA-256", "PLAIN"]:
        kafka_python_roundtrip(args.bootstrap, args.topic, mechanism, "admin", "admin-secret")
    why = [
        refused(args.bootstrap, auth("SCRAM-SHA-256", "admin", "wrong"), "a wrong SCRAM password"),
        refused(args.bootstrap, auth("PLAIN", "admin", "wrong"), "a wrong PLAIN password"),
        refused(args.bootstrap, auth("SCRAM-SHA-512", "mallory", "admin-secret"), "an unknown user"),
        refused(args.bootstrap, {}, "a client that does not authenticate"),
    ]
    why.append(users(args.bootstrap, args.topic))
    print("SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN authenticate confluent-kafka and kafka-python; a user added, "
          "described and deleted by AdminClient; refused: " + " | ".join(w[:60] for w in why))


if __name__ == "__main__":
    main(run)
