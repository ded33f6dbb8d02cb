#!/usr/bin/env python3
"""KIP-368 with a real client: confluent-kafka (librdkafka re-authenticates before the session
lifetime SaslAuthenticate told it runs out) produces records for 8 s over one
connection to a broker whose sessions last 2 s, and reads them back: every record delivered,
none refused.
"""

import argparse
import time

from common import expect, main
from sasl_clients import auth, confluent_roundtrip_with
from confluent_kafka import Producer


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    args = ap.parse_args()
    config = {"bootstrap.servers": args.bootstrap, **auth("SCRAM-SHA-256", "admin", "admin-secret")}
    p = Producer({**config, "acks": "all", "linger.ms": 0})
    delivered, errors = [], []
    end = time.monotonic() + 8
    i = 0
    while time.monotonic() < end:
        p.produce(args.topic, value=f"reauth-{i}", on_delivery=lambda err, msg: (errors if err else delivered).append(err or msg.offset()))
        p.poll(0.2)
        i += 1
    p.flush(20)
    expect(not errors and len(delivered) == i, f"over 8 s of 2 s sessions: {len(delivered)} of {i} delivered, errors {errors[:3]}")
    confluent_roundtrip_with(args.bootstrap, args.topic, "reauth", auth("SCRAM-SHA-512", "admin", "admin-secret"), n=5)
    print(f"{i} records over 8 s through 2 s SASL sessions, every one delivered")


if __name__ == "__main__":
    main(run)
