#!/usr/bin/env python3
"""Group configs (ConfigResource type GROUP, 32) with confluent-kafka's AdminClient, in two phases
around a restart.

--phase change (a broker that has never heard of the group):
  * describe_configs of the group reports every group config at its default, DEFAULT_CONFIG;
  * incremental_alter_configs SETs share.auto.offset.reset=earliest and
    share.record.lock.duration.ms=60000; describe_configs reports both as GROUP_CONFIG (8), the
    others untouched;
  * an unknown name and a bad value (a lock of 999 ms, a reset of by_duration:1h) are refused
    with INVALID_CONFIG naming the config; nothing changes;
  * DELETE share.record.lock.duration.ms puts it back at its default, DEFAULT_CONFIG.
--phase restarted (the same data directory, a new broker process): share.auto.offset.reset is
  still earliest, GROUP_CONFIG, replayed from the metadata log.
"""

import argparse

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

from common import expect, fail, main

GROUP = ConfigSource.GROUP_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value
DEFAULTS = {
    "share.auto.offset.reset": "latest",
    "share.record.lock.duration.ms": "30000",
    "share.isolation.level": "read_uncommitted",
    "share.session.timeout.ms": "45000",
    "share.heartbeat.interval.ms": "5000",
    "consumer.session.timeout.ms": "45000",
    "consumer.heartbeat.interval.ms": "5000",
}


def describe(admin, group):
    resource = ConfigResource(ResourceType.GROUP, group)
    try:
        configs = admin.describe_configs([resource])[resource].result(timeout=20)
    except KafkaException as e:
        fail(f"describe_configs(GROUP {group!r}) failed: {e.args[0]}")
    return {name: (entry.value, entry.source) for name, entry in configs.items()}


def expect_configs(admin, group, changed, when):
    """Every group config is described: those in `changed` with that value as GROUP_CONFIG,
    the rest at their defaults as DEFAULT_CONFIG."""
    have = describe(admin, group)
    expect(sorted(have) == sorted(DEFAULTS), f"{when}: described {sorted(have)}, expected {sorted(DEFAULTS)}")
    for name, default in DEFAULTS.items():
        want = (changed[name], GROUP) if name in changed else (default, DEFAULT)
        expect(have[name] == want, f"{when}: {name} = {have[name][0]!r} from source {have[name][1]}, expected {want[0]!r} from source {want[1]}")


def alter(admin, group, entries):
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    return admin.incremental_alter_configs([resource])[resource]


def set_(name, value):
    return ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)


def refused(future, what, mentions):
    try:
        future.result(timeout=20)
    except KafkaException as e:
        err = e.args[0]
        expect(err.code() == KafkaError.INVALID_CONFIG, f"{what}: failed with {err.name()} ({err.str()}), expected INVALID_CONFIG")
        expect(mentions in err.str(), f"{what}: the reason {err.str()!r} does not name {mentions!r}")
        return
    fail(f"{what}: succeeded, expected INVALID_CONFIG")


def done(future, what):
    try:
        future.result(timeout=20)
    except KafkaException as e:
        fail(f"{what} failed: {e.args[0]}")


def change(args, admin):
    g = args.group
    expect_configs(admin, g, {}, "before any change")
    done(alter(admin, g, [set_("share.auto.offset.reset", "earliest"), set_("share.record.lock.duration.ms", "60000")]), "incremental_alter_configs(GROUP)")
    changed = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "60000"}
    expect_configs(admin, g, changed, "after incremental_alter_configs")
    refused(alter(admin, g, [set_("share.no.such.config", "1")]), "share.no.such.config=1", "share.no.such.config")
    refused(alter(admin, g, [set_("share.record.lock.duration.ms", "999")]), "share.record.lock.duration.ms=999", "share.record.lock.duration.ms")
    refused(alter(admin, g, [set_("share.auto.offset.reset", "by_duration:1h")]), "share.auto.offset.reset=by_duration:1h", "share.auto.offset.reset")
    expect_configs(admin, g, changed, "after the refused changes")
    delete = ConfigEntry("share.record.lock.duration.ms", None, incremental_operation=AlterConfigOpType.DELETE)
    done(alter(admin, g, [delete]), "incremental_alter_configs(GROUP, DELETE share.record.lock.duration.ms)")
    expect_configs(admin, g, {"share.auto.offset.reset": "earliest"}, "after DELETE")
    print(f"group {g!r}: set, refused, deleted and described as expected")


def restarted(args, admin):
    expect_configs(admin, args.group, {"share.auto.offset.reset": "earliest"}, "after a restart")


def run():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--phase", choices=["change", "restarted"], required=True)
    args = ap.parse_args()
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    {"change": change, "restarted": restarted}[args.phase](args, admin)


if __name__ == "__main__":
    main(run)
