#!/usr/bin/env python3
"""Real clients over TLS. `--mode sasl_ssl`: a SASL_SSL listener, whose certificate the
clients check against the test CA: confluent-kafka with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN
and kafka-python with SCRAM-SHA-512 produce and read back; a wrong password and a client that
trusts another CA are refused. `--mode ssl`: an SSL listener with ssl.client.auth=required:
kafka-python and confluent-kafka presenting alice's certificate produce and read back; a client
without a certificate, and one whose certificate another CA signed, are refused.
"""

import argparse
import os

from common import main
from sasl_clients import confluent_roundtrip_with, kafka_python_roundtrip_with, refused


def sasl_ssl(bootstrap, topic, certs):
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": os.path.join(certs, "ca.pem")}

    def login(mechanism, password="admin-secret", **more):
        return {**tls, "sasl.mechanisms": mechanism, "sasl.username": "admin", "sasl.password": password, **more}

    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]:
        confluent_roundtrip_with(bootstrap, topic, f"sasl-ssl-{mechanism}", login(mechanism))
    kafka_python_roundtrip_with(bootstrap, topic, "SCRAM-SHA-512", dict(
        security_protocol="SASL_SSL", ssl_cafile=os.path.join(certs, "ca.pem"), sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="admin", sasl_plain_password="admin-secret"))
    why = [
        refused(bootstrap, login("SCRAM-SHA-256", password="wrong"), "a wrong password over SASL_SSL"),
        refused(bootstrap, login("SCRAM-SHA-256", **{"ssl.ca.location": os.path.join(certs, "rogue-ca.pem")}),
                "a client that trusts another CA"),
    ]
    print("SASL_SSL: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN with confluent-kafka, SCRAM-SHA-512 with kafka-python; "
          "refused: " + " | ".join(w[:80] for w in why))


def ssl(bootstrap, topic, certs):
    def client(name, ca="ca.pem"):
        return {"security.protocol": "SSL", "ssl.ca.location": os.path.join(certs, ca),
                "ssl.certificate.location": os.path.join(certs, f"{name}.crt"), "ssl.key.location": os.path.join(certs, f"{name}.key")}

    kafka_python_roundtrip_with(bootstrap, topic, "ssl-alice", dict(
        security_protocol="SSL", ssl_cafile=os.path.join(certs, "ca.pem"),
        ssl_certfile=os.path.join(certs, "alice.crt"), ssl_keyfile=os.path.join(certs, "alice.key")))
    confluent_roundtrip_with(bootstrap, topic, "ssl-alice", client("alice"))
    why = [
        refused(bootstrap, {"security.protocol": "SSL", "ssl.ca.location": os.path.join(certs, "ca.pem")}, "a client without a certificate"),
        refused(bootstrap, client("rogue-alice"), "a client whose certificate another CA signed"),
    ]
    print("SSL with client certificates: kafka-python and confluent-kafka as alice; refused: " + " | ".join(w[:80] for w in why))


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--certs", required=True, help="the directory of tests/all/certs.rs's files")
    ap.add_argument("--mode", choices=["sasl_ssl", "ssl"], required=True)
    args = ap.parse_args()
    (sasl_ssl if args.mode == "sasl_ssl" else ssl)(args.bootstrap, args.topic, args.certs)


if __name__ == "__main__":
    main(run)
