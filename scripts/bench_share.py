#!/usr/bin/env python3
"""The client side of scripts/bench-share.sh: a KIP-932 share group against a consumer group
reading the same topic, with confluent-kafka.

One subcommand per step; each prints one JSON line on stdout and exits non-zero when the step
failed (an error, a record missing, a deadline passed, a member that died). Every wait has a
deadline.

    bench_share.py read --kind classic|share --members M --topic T --expect N [--broker-pid PID]
        M members of a new group (a fresh group id per call), one process each, read the topic
        (N records, all of it) from the beginning:
          classic  confluent-kafka Consumer, subscribe(), auto.offset.reset=earliest, the
                   client's default auto-commit, fetch.queue.backoff.ms=10 (as bench_groups.py
                   consume), consume(10000, 0.1) in a loop;
          share    confluent-kafka ShareConsumer (KIP-932), the group's share.auto.offset.reset
                   set to earliest first (incremental_alter_configs on the GROUP resource, off
                   the clock), implicit acknowledgement (the default: the records of one poll()
                   are accepted by the next poll(), the last ones by close()), max.poll.records
                   the client's default (500) unless --max-poll-records, poll(0.1) in a loop.
        The members mark each (partition, offset) they are handed in one shared bitmap; the read
        is over when N distinct records have been handed out. Every member constructs its client
        first; the clock starts when all of them are ready (a barrier) and call subscribe().
        Reports "msgs_per_s" (N over the time from subscribe() to the N-th distinct record, the
        join included), "steady_msgs_per_s" (N over the time from the first record handed to any
        member to the N-th distinct one), "MB_per_s" (the steady rate in value bytes),
        "first_record_s", "deliveries" and "duplicates" (records handed out more than once:
        a classic group's rebalance re-reads, a share group's redeliveries), per member the
        records, the partitions and the records per non-empty poll; the broker's CPU
        (--broker-pid) and `other_cores` (CPU used by neither the broker nor the members, per
        second: another program competing). Fails unless the distinct (partition, offset)
        pairs are exactly the topic's N, with no error.
        --config K=V (repeatable) adds a client setting to every member; --debug CONTEXTS
        (librdkafka's `debug`, e.g. fetch) writes each member's client log to --debug-log PATH.M.
    bench_share.py produce --topic T --n N [--size 100] [--broker-pid PID]
        N records of --size random bytes, record i to partition i mod the topic's partitions (so
        every partition holds N/P and is fed batches alike), acks=1, linger.ms=5, no compression,
        as bench_clients.py produce; fails unless every record was delivered.
    bench_share.py group-config --group G
        sets and checks the share group's share.auto.offset.reset=earliest (what `read --kind
        share` does for its own group; for a manual run).
    bench_share.py summarize RESULTS.jsonl ...
        medians [min–max] per kind, record count, member count and changed client settings (runs
        with more than 0.25 cores of other programs left out where uncontended ones exist), and
        the share group against the consumer group, as a Markdown table.

The broker address comes from $BOOTSTRAP (default 127.0.0.1:9092).
"""

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_clients import BOOTSTRAP, CONTENDED_CORES, BrokerCpu, emit, need_confluent  # noqa: E402

POLL_S = 0.1          # each member's poll timeout: how soon it sees the end of a run


def set_share_reset(group, timeout=30):
    """share.auto.offset.reset=earliest on the GROUP config resource, read back with
    describe_configs. Raises on any failure."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=timeout)
    described = ConfigResource(ResourceType.GROUP, group)
    configs = admin.describe_configs([described])[described].result(timeout=timeout)
    reset = configs.get("share.auto.offset.reset")
    if reset is None or reset.value != "earliest":
        raise RuntimeError(f"group {group!r}: share.auto.offset.reset is {reset.value if reset else None!r} after setting earliest")


def member(i, kind, group, topic, bases, lows, bitmap, barrier, stop, counter, results, opts):
    """One group member, in its own process: reads until `stop`, marking what it is handed in the
    shared bitmap (a byte per record), then puts its figures on `results`."""
    out = {"member": i, "deliveries": 0, "new": 0, "new_bytes": 0, "errors": 0, "first_error": None,
           "polls": 0, "batches": 0, "batch_max": 0, "partitions": {}, "first": None, "last_new": None}
    if opts["debug"]:
        fd = os.open(f"{opts['debug_log']}.{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)             # librdkafka logs to stderr
    seen = memoryview(bitmap).cast("B")
    try:
        from confluent_kafka import Consumer, ShareConsumer
        conf = {"bootstrap.servers": BOOTSTRAP, "group.id": group, "client.id": f"bench-{kind}-{i}"}
        if opts["debug"]:
            conf["debug"] = opts["debug"]
        conf.update(opts["config"])
        if kind == "classic":
            conf = {"auto.offset.reset": "earliest", "fetch.queue.backoff.ms": opts["backoff_ms"], **conf}
            c = Consumer(conf)
            fetch = lambda: c.consume(10_000, POLL_S)  # noqa: E731
        else:
            if opts["max_poll_records"]:
                conf.setdefault("max.poll.records", opts["max_poll_records"])
            c = ShareConsumer(conf)
            fetch = lambda: c.poll(POLL_S)  # noqa: E731
        cpu0 = time.process_time()
        barrier.wait(60)
        out["subscribed"] = time.perf_counter()
        c.subscribe([topic])
        deadline = out["subscribed"] + opts["timeout"]
        parts = out["partitions"]
        while not stop.is_set() and time.perf_counter() < deadline:
            msgs = fetch()
            out["polls"] += 1
            if not msgs:
                continue
            now = time.perf_counter()
            if out["first"] is None:
                out["first"] = now
            out["batches"] += 1
            out["batch_max"] = max(out["batch_max"], len(msgs))
            new = new_bytes = 0
            for m in msgs:
                if m.error() is not None:
                    out["errors"] += 1
                    out["first_error"] = out["first_error"] or str(m.error())
                    continue
                p = m.partition()
                parts[p] = parts.get(p, 0) + 1
                idx = bases[p] + m.offset() - lows[p]
                if not seen[idx]:
                    seen[idx] = 1
                    new += 1
                    new_bytes += len(m.value())
            out["deliveries"] += len(msgs)
            if new:
                out["new"] += new
                out["new_bytes"] += new_bytes
                out["last_new"] = time.perf_counter()
                with counter.get_lock():
                    counter.value += new
        out["cpu_s"] = time.process_time() - cpu0
        t = time.perf_counter()
        c.close()
        out["close_s"] = round(time.perf_counter() - t, 3)
    except Exception as e:  # reported, and the run fails
        out["exception"] = f"{type(e).__name__}: {e}"
        barrier.abort()           # a member that never reached the barrier must not hold the others
    out["partitions"] = {str(p): n for p, n in sorted(out["partitions"].items())}
    results.put(out)


def cmd_read(a):
    need_confluent()
    from confluent_kafka import Consumer, TopicPartition
    group = f"bench-{a.kind}-{a.members}-{os.getpid()}-{time.time_ns()}"
    rec = {"kind": f"read-{a.kind}", "tag": a.tag or f"{a.members} member{'s' if a.members > 1 else ''}",
           "topic": a.topic, "members": a.members, "group": group, "expected": a.expect}
    if a.config:
        rec["config"] = a.config
    if a.max_poll_records:
        rec["max_poll_records"] = a.max_poll_records
    # The topic's partitions and offsets, so each (partition, offset) has a byte in the bitmap.
    probe = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "bench-share-probe"})
    parts = sorted(probe.list_topics(a.topic, timeout=10).topics[a.topic].partitions)
    lows, bases, total = {}, {}, 0
    for p in parts:
        lo, hi = probe.get_watermark_offsets(TopicPartition(a.topic, p), timeout=10)
        lows[p], bases[p] = lo, total
        total += hi - lo
    probe.close()
    rec.update(partitions=len(parts), in_topic=total)
    if total != a.expect:
        emit({**rec, "failed": f"the topic holds {total} records, expected {a.expect}"}, False)
    if a.kind == "share":
        set_share_reset(group)
    ctx = mp.get_context("spawn")     # a fresh interpreter per member: no librdkafka state forked
    bitmap = ctx.RawArray("B", max(1, total))
    barrier, stop, results = ctx.Barrier(a.members + 1), ctx.Event(), ctx.Queue()
    counter = ctx.Value("q", 0)
    opts = {"timeout": a.timeout, "backoff_ms": a.backoff_ms, "max_poll_records": a.max_poll_records,
            "debug": a.debug, "debug_log": a.debug_log, "config": dict(kv.split("=", 1) for kv in a.config)}
    procs = [ctx.Process(target=member, args=(i, a.kind, group, a.topic, bases, lows, bitmap, barrier,
                                              stop, counter, results, opts), daemon=True)
             for i in range(a.members)]
    for p in procs:
        p.start()
    started = True
    try:
        barrier.wait(120)
    except Exception:             # BrokenBarrierError: a member failed before it was ready
        started = False
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    deadline = t0 + a.timeout
    died = not started
    while started and counter.value < total and time.perf_counter() < deadline:
        if not all(p.is_alive() for p in procs):
            died = True
            break
        time.sleep(0.005)
    end_seen = time.perf_counter()
    host_s = (BrokerCpu.host() - cpu.h0) / cpu.hz
    broker_s = (cpu.ticks() - cpu.t0) / cpu.hz if a.broker_pid else 0.0
    stop.set()
    outs = []
    for _ in procs:
        try:
            outs.append(results.get(timeout=60))
        except Exception:
            break
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    distinct = bytes(memoryview(bitmap).cast("B")[:total]).count(1)
    outs.sort(key=lambda o: o["member"])
    firsts = [o["first"] for o in outs if o.get("first")]
    lasts = [o["last_new"] for o in outs if o.get("last_new")]
    deliveries = sum(o["deliveries"] for o in outs)
    errors = sum(o["errors"] for o in outs)
    rec.update(distinct=distinct, deliveries=deliveries, duplicates=deliveries - distinct - errors, errors=errors)
    if firsts and lasts:
        first, end = min(firsts), max(lasts)
        secs = end - t0
        rec.update(secs=round(secs, 3), msgs_per_s=round(distinct / secs), first_record_s=round(first - t0, 3),
                   steady_msgs_per_s=round(distinct / (end - first)) if end > first else None,
                   MB_per_s=round(sum(o["new_bytes"] for o in outs) / (end - first) / 1e6, 2) if end > first else None)
    if a.broker_pid:
        rec["cpu_s"] = round(broker_s, 3)
    client_s = sum(o.get("cpu_s", 0.0) for o in outs)
    rec["client_cpu_s"] = round(client_s, 3)
    rec["other_cores"] = round(max(0.0, host_s - broker_s - client_s) / (end_seen - t0), 2)
    rec["per_member"] = [{"records": o["deliveries"], "partitions": o["partitions"], "polls_with_records": o["batches"],
                          "records_per_poll": round(o["deliveries"] / o["batches"], 1) if o["batches"] else 0,
                          "max_per_poll": o["batch_max"], "close_s": o.get("close_s")} for o in outs]
    problems = [f"member {o['member']}: {o['exception']}" for o in outs if "exception" in o]
    problems += [f"member {o['member']}: {o['errors']} errors, first {o['first_error']}" for o in outs if o["errors"]]
    if len(outs) < a.members:
        problems.append(f"{a.members - len(outs)} member(s) reported nothing")
    if died:
        problems.append("a member process exited during the read")
    if distinct != total:
        problems.append(f"{distinct} distinct (partition, offset) pairs read of {total}"
                        + (" (deadline passed)" if time.perf_counter() >= deadline else ""))
    if problems:
        rec["failed"] = "; ".join(problems)
    emit(rec, not problems)


def cmd_produce(a):
    need_confluent()
    from confluent_kafka import Producer
    failed = []
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": a.acks, "linger.ms": a.linger, "compression.type": "none",
                         "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_097_151,
                         "delivery.report.only.error": True,
                         "on_delivery": lambda err, msg: failed.append(str(err)) if err else None})
    parts = len(producer.list_topics(a.topic, timeout=10).topics[a.topic].partitions)
    payload = os.urandom(a.size)
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    deadline = time.monotonic() + a.timeout
    sent = 0
    while sent < a.n and time.monotonic() < deadline:
        try:
            producer.produce(a.topic, payload, partition=sent % parts)
        except BufferError:
            producer.poll(0.005)
            continue
        sent += 1
        if not sent & 0x3FFF:
            producer.poll(0)
    left = producer.flush(max(1.0, deadline - time.monotonic())) + (a.n - sent)
    secs = time.perf_counter() - t0
    rec = {"kind": "produce", "tag": a.tag, "topic": a.topic, "partitions": parts, "n": a.n, "size": a.size,
           "acks": a.acks, "linger_ms": a.linger, "secs": round(secs, 3), "msgs_per_s": round(a.n / secs),
           "errors": len(failed), "undelivered": left}
    cpu.stop(rec)
    emit(rec, not failed and left == 0)


def cmd_group_config(a):
    need_confluent()
    set_share_reset(a.group)
    print(json.dumps({"kind": "group-config", "group": a.group, "share.auto.offset.reset": "earliest"}))


# ----- summary ------------------------------------------------------------------------------

def variant(d):
    """The client settings a read changed from the script's defaults, as a label."""
    return " ".join(d.get("config", []) + ([f"max.poll.records={d['max_poll_records']}"] if d.get("max_poll_records") else []))


def cmd_summarize(a):
    rows = defaultdict(list)
    env = []
    for path in a.files:
        for line in open(path):
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if d.get("kind", "").startswith("read-"):
                rows[(d["kind"][5:], d["expected"], d["members"], variant(d))].append(d)
            elif d.get("kind") in ("env", "clients", "produce", "batches"):
                env.append(d)

    def values(kind, n, members, var, key):
        ds = rows.get((kind, n, members, var), [])
        clean = [d for d in ds if d.get("other_cores", 0) <= CONTENDED_CORES]
        return [d[key] for d in (clean or ds) if d.get(key) is not None], len(ds) - len(clean)

    def fmt(xs, f):
        if not xs:
            return "—"
        return f(statistics.median(xs)) + (f" [{f(min(xs))}–{f(max(xs))}]" if len(xs) > 1 else "")

    rate = lambda x: f"{x:,.0f}"  # noqa: E731
    for e in env:
        print("# " + "  ".join(f"{k}={v}" for k, v in e.items() if k not in ("kind", "ok")))
    out = ["| group | records | members | records/s, steady | MB/s, steady | records/s, from subscribe() | first record | "
           "broker CPU per 1M | duplicates | runs |", "|---|---|---|---|---|---|---|---|---|---|"]
    order = sorted(rows, key=lambda k: (k[0], k[3], k[1], k[2]))    # kind, settings, records, members
    for (kind, n, members, var) in order:
        ds = rows[(kind, n, members, var)]
        bad = sum(not d["ok"] for d in ds)
        _, contended = values(kind, n, members, var, "msgs_per_s")
        cpu = [d["cpu_s"] / (d["distinct"] / 1e6) for d in ds if d.get("cpu_s") is not None and d.get("distinct")
               and d.get("other_cores", 0) <= CONTENDED_CORES] or \
              [d["cpu_s"] / (d["distinct"] / 1e6) for d in ds if d.get("cpu_s") is not None and d.get("distinct")]
        left_out = "" if not contended else (f"all {len(ds)} contended" if contended == len(ds) else f"{contended} contended left out")
        notes = [s for s in (f"{bad} FAILED" if bad else "", left_out) if s]
        name = ("consumer group" if kind == "classic" else "share group") + (f", {var}" if var else "")
        out.append(f"| {name} | {n:,} | {members} | "
                   f"{fmt(values(kind, n, members, var, 'steady_msgs_per_s')[0], rate)} | "
                   f"{fmt(values(kind, n, members, var, 'MB_per_s')[0], lambda x: f'{x:.1f}')} | "
                   f"{fmt(values(kind, n, members, var, 'msgs_per_s')[0], rate)} | "
                   f"{fmt(values(kind, n, members, var, 'first_record_s')[0], lambda x: f'{x:.2f} s')} | "
                   f"{fmt(cpu, lambda x: f'{x:.2f} s')} | "
                   f"{fmt(values(kind, n, members, var, 'duplicates')[0], lambda x: f'{x:,.0f}')} | "
                   f"{len(ds)}{' (' + '; '.join(notes) + ')' if notes else ''} |")
    ratios = []
    for (kind, n, members, var) in order:
        s, _ = values(kind, n, members, var, "steady_msgs_per_s")
        c, _ = values("classic", n, members, "", "steady_msgs_per_s")
        if kind == "share" and s and c:
            ratios.append(f"share group{', ' + var if var else ''} / consumer group, {n:,} records, {members} member(s), steady records/s: "
                          f"{statistics.median(s) / statistics.median(c):.2f}")
    print("\n".join(out))
    if ratios:
        print("\n" + "\n".join(ratios))
    per_poll = defaultdict(list)
    for key, ds in rows.items():
        for d in ds:
            per_poll[key] += [m["records_per_poll"] for m in d.get("per_member", []) if m["records_per_poll"]]
    for key in sorted(per_poll):
        if per_poll[key]:
            print(f"records per non-empty poll, {key[0]}, {key[1]:,} records, {key[2]} member(s){', ' + key[3] if key[3] else ''}: median "
                  f"{statistics.median(per_poll[key]):,.0f} (members' means {min(per_poll[key]):,.0f}–{max(per_poll[key]):,.0f})")
    failed = [d for ds in rows.values() for d in ds if not d["ok"]]
    if failed:
        print(f"\n{len(failed)} run(s) FAILED: " + "; ".join(d.get("failed", "?") for d in failed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("read")
    p.add_argument("--kind", choices=["classic", "share"], required=True)
    p.add_argument("--members", type=int, default=1)
    p.add_argument("--topic", required=True)
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--tag", default="")
    p.add_argument("--broker-pid", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300, help="seconds the read may take")
    p.add_argument("--backoff-ms", type=int, default=10, help="classic: fetch.queue.backoff.ms")
    p.add_argument("--max-poll-records", type=int, default=0, help="share: max.poll.records (0: the client's default, 500)")
    p.add_argument("--config", action="append", default=[], metavar="K=V",
                   help="a client setting for every member (repeatable), e.g. fetch.max.bytes=1048576")
    p.add_argument("--debug", default="", help="librdkafka debug contexts, e.g. fetch")
    p.add_argument("--debug-log", default="share-debug.log", help="with --debug: each member's log goes to PATH.M")
    p.set_defaults(fn=cmd_read)
    p = sub.add_parser("produce")
    p.add_argument("--topic", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--acks", default="1")
    p.add_argument("--linger", default="5", help="linger.ms")
    p.add_argument("--tag", default="setup")
    p.add_argument("--broker-pid", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300)
    p.set_defaults(fn=cmd_produce)
    p = sub.add_parser("group-config")
    p.add_argument("--group", required=True)
    p.set_defaults(fn=cmd_group_config)
    p = sub.add_parser("summarize")
    p.add_argument("files", nargs="+")
    p.set_defaults(fn=cmd_summarize)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
