#!/usr/bin/env python3
"""The client side of scripts/bench-broker.sh: real Kafka clients measuring a running broker.

One file, one subcommand per step; each step prints one JSON line on stdout and exits non-zero
when the step failed (errors, records missing, a deadline passed), so the shell script can record
the line and still say loudly that something went wrong. Every wait has a deadline: a stalled
broker ends a step, it never hangs the benchmark.

    bench_clients.py check                         client versions, or what to install
    bench_clients.py topic create|delete|alter NAME [PARTITIONS] [--replication-factor R] [--config K=V ...]
    bench_clients.py produce --topic T --n N --acks 1|all [--keys K] [--broker-pid PID]
    bench_clients.py consume --topic T --expect N [--backoff-ms 10] [--broker-pid PID]
    bench_clients.py latency --topic T --rate 1000 --secs 10
    bench_clients.py datafile PATH --n N           N lines of 100 letters, the kcat input
    bench_clients.py kcat-produce --topic T --file PATH --n N --acks A [--broker-pid PID]
    bench_clients.py kcat-consume --topic T --expect N [--big-queue] [--broker-pid PID]
    bench_clients.py summarize RESULTS.jsonl ...   medians beside the targets, as a Markdown table

The broker address comes from $BOOTSTRAP (default 127.0.0.1:9092). With --broker-pid a step also
reports the broker's CPU seconds (utime+stime of /proc/PID/stat, 10 ms ticks) spent inside the
measured interval, plus the same figure in nanoseconds from the threads' schedstat as a check on
the tick rounding. The steps follow the shared client-side benchmark (produce.py, consume.py,
latency.py, kcat_bench.sh) so the figures compare with the reference ones; this copy must not
depend on it at run time.
"""

import argparse
import glob
import json
import os
import random
import statistics
import string
import subprocess
import sys
import threading
import time
from collections import defaultdict

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")

# What the project promises (docs/benchmarks.md); the summary marks each figure against these.
TARGET_PRODUCE_PY = 1_700_000      # records/s, confluent-kafka, 100-byte records, linger.ms=5
TARGET_PRODUCE_KCAT = 2_300_000    # records/s, kcat -P -l FILE, linger.ms=5
TARGET_CONSUME = 1_700_000         # records/s, from offset 0
TARGET_CPU_PER_M = 0.2             # broker CPU seconds per 1,000,000 records
TARGET_P99_MS = 0.3                # acks=all, 1,000 records/s, linger.ms=0

# A step during which programs other than the broker and the client used more CPU than this
# (cores, averaged over the step) is "contended"; on an idle machine the figure is 0.0–0.1.
CONTENDED_CORES = 0.25


def emit(record, ok):
    record["ok"] = ok
    print(json.dumps(record), flush=True)
    sys.exit(0 if ok else 1)


def need_confluent():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        sys.exit(f"bench_clients.py: confluent-kafka is missing ({e}).\n"
                 f"Install it: `python3 -m venv target/client-venv && target/client-venv/bin/pip install "
                 f"confluent-kafka kafka-python` (or run .ci/run), or set PY to a Python that has it.")


class BrokerCpu:
    """CPU time the broker process used between `start()` and `stop()`."""

    def __init__(self, pid):
        self.pid = pid
        self.hz = os.sysconf("SC_CLK_TCK")

    def ticks(self):
        # Fields after the command name, which may itself contain spaces and parentheses.
        fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])       # utime, stime (fields 14 and 15)

    def sched_ns(self):
        total = 0
        for path in glob.glob(f"/proc/{self.pid}/task/*/schedstat"):
            try:
                total += int(open(path).read().split()[0])
            except (OSError, IndexError, ValueError):
                pass                                      # a thread that just exited
        return total

    @staticmethod
    def host():
        # All CPUs: busy ticks (user, nice, system, irq, softirq, steal).
        xs = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return xs[0] + xs[1] + xs[2] + xs[5] + xs[6] + xs[7]

    @staticmethod
    def client():
        # This process (all its threads: librdkafka's too) and finished children (kcat).
        import resource
        me, kids = os.times(), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.user + me.system + kids.ru_utime + kids.ru_stime

    def start(self):
        self.h0, self.c0, self.w0 = self.host(), self.client(), time.perf_counter()
        if self.pid:
            self.t0, self.s0 = self.ticks(), self.sched_ns()

    def stop(self, record):
        """Adds the broker's CPU seconds, and `other_cores`: CPU that neither the broker nor this
        client used, per second of the step. On a 2-core machine anything much above 0 means
        another program competed for the CPUs and the step's figures are suspect."""
        host_s = (self.host() - self.h0) / self.hz
        client_s = self.client() - self.c0
        broker_s = 0.0
        if self.pid:
            broker_s = (self.ticks() - self.t0) / self.hz
            record["cpu_s"] = round(broker_s, 3)
            record["cpu_sched_s"] = round((self.sched_ns() - self.s0) / 1e9, 3)
        record["client_cpu_s"] = round(client_s, 3)
        record["other_cores"] = round(max(0.0, host_s - broker_s - client_s) / (time.perf_counter() - self.w0), 2)


# ----- topics -------------------------------------------------------------------------------

def cmd_topic(a):
    need_confluent()
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    configs = dict(kv.split("=", 1) for kv in a.config)
    if a.op == "alter":
        from confluent_kafka.admin import ConfigResource, ConfigEntry, AlterConfigOpType, ResourceType
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        for f in admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, a.name, incremental_configs=entries)]).values():
            f.result(30)
        return
    if a.op == "create":
        for f in admin.create_topics([NewTopic(a.name, num_partitions=a.partitions, replication_factor=a.replication_factor, config=configs)],
                                     request_timeout=30).values():
            f.result(30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:   # until metadata lists every partition
            t = admin.list_topics(a.name, timeout=10).topics.get(a.name)
            if t is not None and t.error is None and len(t.partitions) == a.partitions:
                return
            time.sleep(0.1)
        sys.exit(f"topic {a.name}: metadata did not show {a.partitions} partitions within 30 s")
    for f in admin.delete_topics([a.name], request_timeout=30).values():
        f.result(30)


# ----- confluent-kafka steps ----------------------------------------------------------------

def cmd_produce(a):
    need_confluent()
    from confluent_kafka import Producer
    errors = [0]

    def report(err, msg):
        if err:
            errors[0] += 1

    config = {"bootstrap.servers": BOOTSTRAP, "acks": a.acks, "linger.ms": a.linger,
              "compression.type": "none",
              # The whole run fits in the client queue, so produce() rarely blocks.
              "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_097_151,
              "delivery.report.only.error": True, "on_delivery": report}
    if a.batch_records:
        config["batch.num.messages"] = a.batch_records
    producer = Producer(config)
    producer.list_topics(a.topic, timeout=10)            # connection and metadata before the clock
    payload = os.urandom(a.size)
    cpu = BrokerCpu(a.broker_pid)
    deadline = time.monotonic() + a.timeout
    cpu.start()
    t0 = time.perf_counter()
    sent = 0
    keys = [b"key-%08d" % k for k in range(a.keys)] if a.keys else None
    while sent < a.n and time.monotonic() < deadline:
        try:
            if keys:
                producer.produce(a.topic, payload, key=keys[sent % a.keys])
            else:
                producer.produce(a.topic, payload)
        except BufferError:            # the client queue is full: let deliveries drain it
            producer.poll(0.005)
            continue
        sent += 1
        if a.pace and not sent % 100:
            ahead = t0 + sent / a.pace - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
        if not sent & 0x3FFF:
            producer.poll(0)
    left = producer.flush(max(1.0, deadline - time.monotonic())) + (a.n - sent)
    secs = time.perf_counter() - t0
    rec = {"kind": "produce", "tag": a.tag, "topic": a.topic, "acks": a.acks, "n": a.n, "size": a.size,
           "secs": round(secs, 3), "msgs_per_s": round(a.n / secs), "MB_per_s": round(a.n * a.size / secs / 1e6, 1),
           "errors": errors[0], "undelivered": left}
    cpu.stop(rec)
    emit(rec, errors[0] == 0 and left == 0)


def cmd_consume(a):
    need_confluent()
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    # assign() with explicit offsets and no commits: the broker serves no consumer groups, and
    # librdkafka wants a group.id even so.
    conf = {"bootstrap.servers": BOOTSTRAP, "group.id": f"bench-{os.getpid()}", "enable.auto.commit": False}
    if a.backoff_ms is not None:
        conf["fetch.queue.backoff.ms"] = a.backoff_ms
    consumer = Consumer(conf)
    parts = sorted(consumer.list_topics(a.topic, timeout=10).topics[a.topic].partitions)
    consumer.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in parts])
    cpu = BrokerCpu(a.broker_pid)
    n = nbytes = errors = 0
    cpu.start()
    t0 = time.perf_counter()
    deadline = t0 + a.timeout
    while n < a.expect and time.perf_counter() < deadline:
        for m in consumer.consume(num_messages=10_000, timeout=1.0):
            if m.error():
                errors += 1
                continue
            n += 1
            nbytes += len(m.value())
    secs = time.perf_counter() - t0
    rec = {"kind": "consume" if a.backoff_ms is None else f"consume-backoff{a.backoff_ms}", "tag": a.tag,
           "topic": a.topic, "partitions": len(parts), "expected": a.expect, "n": n, "secs": round(secs, 3),
           "msgs_per_s": round(n / secs), "MB_per_s": round(nbytes / secs / 1e6, 1), "errors": errors}
    cpu.stop(rec)
    consumer.close()
    emit(rec, errors == 0 and n == a.expect)


def cmd_latency(a):
    need_confluent()
    from confluent_kafka import Producer
    lat, wall, errors = [], [], [0]

    def report_from(sent):
        def report(err, msg):
            if err:
                errors[0] += 1
            else:
                # librdkafka's figure: from produce() to this callback. The wall-clock one, taken
                # around the Python call, is a check on it.
                lat.append(msg.latency())
                wall.append(time.perf_counter() - sent)
        return report

    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": a.acks, "linger.ms": a.linger,
                         "compression.type": "none"})
    payload = os.urandom(a.size)
    for _ in range(100):                  # warm-up: connection, metadata, producer id; not counted
        producer.produce(a.topic, payload)
    producer.flush(30)
    n = int(a.rate * a.secs)
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    for i in range(n):
        target = t0 + i / a.rate
        while (now := time.perf_counter()) < target:
            producer.poll(target - now)
        producer.produce(a.topic, payload, callback=report_from(time.perf_counter()))
        producer.poll(0)
    left = producer.flush(60)

    def pct(q, xs=lat):
        xs = sorted(xs)
        return round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else None

    rec = {"kind": "latency", "tag": a.tag, "topic": a.topic, "acks": a.acks, "rate": a.rate, "n": n,
           "delivered": len(lat), "errors": errors[0], "undelivered": left,
           "p50_ms": pct(.50), "p90_ms": pct(.90), "p99_ms": pct(.99), "p999_ms": pct(.999), "max_ms": pct(1.0),
           "wall_p50_ms": pct(.50, wall), "wall_p99_ms": pct(.99, wall)}
    cpu.stop(rec)
    emit(rec, errors[0] == 0 and left == 0 and len(lat) == n)


# ----- kcat steps ---------------------------------------------------------------------------

def cmd_batches(a):
    """Counts the record batches and records the broker holds for a topic, from its segment files
    (docs/storage.md: base offset 8 bytes, length 4, then `length` bytes; records count at byte
    57 of the batch): the denominator of CPU per batch."""
    import struct
    batches = records = 0
    for log in glob.glob(os.path.join(a.data_dir, f"{a.topic}-*", "*.log")):
        data = open(log, "rb").read()
        pos = 0
        while pos + 61 <= len(data):
            length = struct.unpack_from(">i", data, pos + 8)[0]
            if length <= 0:
                break
            batches += 1
            records += struct.unpack_from(">i", data, pos + 57)[0]
            pos += 12 + length
    emit({"kind": "batches", "tag": a.tag, "topic": a.topic, "batches": batches, "records": records}, batches > 0)


def cmd_serving(a):
    """Waits until every partition of the topic has a leader and answers ListOffsets: how long a
    restarted broker takes to serve again. An AdminClient, not a consumer: a consumer would ask
    for a group coordinator and have the broker create `__consumer_offsets` on the clock."""
    need_confluent()
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    t0 = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    deadline = time.monotonic() + a.timeout
    served = False
    while not served and time.monotonic() < deadline:
        try:
            t = admin.list_topics(a.topic, timeout=5).topics.get(a.topic)
            if t is not None and t.error is None and len(t.partitions) == a.partitions \
                    and all(p.leader >= 0 and p.error is None for p in t.partitions.values()):
                asked = {TopicPartition(a.topic, p): OffsetSpec.latest() for p in range(a.partitions)}
                for f in admin.list_offsets(asked, request_timeout=10).values():
                    f.result(10)
                served = True
        except Exception:
            time.sleep(0.02)
    secs = time.perf_counter() - t0
    emit({"kind": "serving", "tag": a.tag, "topic": a.topic, "partitions": a.partitions, "secs": round(secs, 3)}, served)


def cmd_datafile(a):
    # Same bytes as the shared kcat benchmark: seeded letters, one record per line.
    r = random.Random(1)
    letters = string.ascii_letters
    with open(a.path, "w") as f:
        for _ in range(a.n):
            f.write("".join(r.choices(letters, k=a.size)) + "\n")


def cmd_kcat_produce(a):
    cmd = ["kcat", "-q", "-P", "-b", BOOTSTRAP, "-t", a.topic, "-X", f"acks={a.acks}", "-X", "linger.ms=5",
           "-l", a.file]
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=a.timeout).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    secs = time.perf_counter() - t0
    rec = {"kind": "kcat-produce", "tag": a.tag, "topic": a.topic, "acks": a.acks, "n": a.n, "rc": rc,
           "secs": round(secs, 3), "msgs_per_s": round(a.n / secs)}
    cpu.stop(rec)
    emit(rec, rc == 0)


def cmd_kcat_consume(a):
    cmd = ["kcat", "-q", "-C", "-b", BOOTSTRAP, "-t", a.topic, "-o", "beginning", "-e"]
    if a.big_queue:   # no librdkafka queue-full fetch backoff, as the shared kcat benchmark's "bigq"
        cmd += ["-X", "queued.min.messages=10000000", "-X", "queued.max.messages.kbytes=1048576"]
    cpu = BrokerCpu(a.broker_pid)
    cpu.start()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    # Counting newlines here instead of `| wc -l` keeps the deadline on the whole pipe: a
    # stalled broker leaves kcat silent, so a timer, not the read loop, must end it.
    watchdog = threading.Timer(a.timeout, proc.kill)
    watchdog.start()
    lines = 0
    while chunk := proc.stdout.read1(1 << 20):
        lines += chunk.count(b"\n")
    rc = proc.wait(timeout=30)
    timed_out = not watchdog.is_alive()
    watchdog.cancel()
    if timed_out:
        rc = "timeout"
    secs = time.perf_counter() - t0
    rec = {"kind": "kcat-consume" + ("-bigq" if a.big_queue else ""), "tag": a.tag, "topic": a.topic,
           "expected": a.expect, "n": lines, "rc": rc, "secs": round(secs, 3), "msgs_per_s": round(lines / secs)}
    cpu.stop(rec)
    emit(rec, rc == 0 and lines == a.expect)


def cmd_check(a):
    need_confluent()
    import confluent_kafka
    print(json.dumps({"kind": "clients", "python": sys.version.split()[0], "confluent_kafka": confluent_kafka.version(),
                      "librdkafka": confluent_kafka.libversion()[0]}))


# ----- summary ------------------------------------------------------------------------------

def cmd_summarize(a):
    rows = defaultdict(list)     # (kind, tag) -> records
    env = []
    for path in a.files:
        for line in open(path):
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if d["kind"] in ("env", "clients"):
                env.append(d)
            else:
                rows[(d["kind"], d["tag"])].append(d)

    def med(kind, tag, key, scale=1.0):
        ds = [d for d in rows.get((kind, tag), []) if key in d and d[key] is not None]
        if not ds:
            return None
        # Steps during which other programs took CPU are left out when clean ones exist: on a
        # 2-core machine they measure the neighbour, not the broker. The table says how many.
        total = len(ds)
        clean = [d for d in ds if d.get("other_cores", 0) <= CONTENDED_CORES]
        ds = clean or ds
        xs = [d[key] * scale / (d["n"] / 1e6 if key.startswith("cpu") else 1) for d in ds]
        note = "" if len(clean) == total else (f"{len(clean)} of {total} uncontended" if clean else "all contended")
        return statistics.median(xs), min(xs), max(xs), len(xs), sum(not d["ok"] for d in ds), note

    def fmt(v, unit):
        if v is None:
            return "—", ""
        m, lo, hi, k, bad, note = v
        f = {"rec/s": lambda x: f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k",
             "s": lambda x: f"{x:.3f}", "ms": lambda x: f"{x:.3f}"}[unit]
        spread = f" [{f(lo)}–{f(hi)}]" if k > 1 else ""
        notes = [x for x in (f"{bad} of {k} FAILED" if bad else "", note) if x]
        return f"{f(m)}{spread}" + (f" ({'; '.join(notes)})" if notes else ""), m

    out = ["| measurement | median [min–max] | target | met |", "|---|---|---|---|"]

    def row(label, v, unit, target=None, higher_better=True, check=None):
        text, m = fmt(v, unit)
        if check is not None:    # the same CPU figure from schedstat (ns), beside the 10 ms ticks
            text += f" (schedstat {check[0]:.3f})"
        if target is None or m == "":
            verdict = ""
        else:
            verdict = "yes" if (m >= target if higher_better else m <= target) else "**no**"
        tt = "" if target is None else (("≥ " if higher_better else "≤ ") +
                                        (f"{target / 1e6:.1f}M" if unit == "rec/s" else f"{target}") +
                                        (f" {unit}" if unit != "rec/s" else " rec/s"))
        out.append(f"| {label} | {text} | {tt} | {verdict} |")

    tags = [f"p{p} acks={k}" for p in (1, 6) for k in ("1", "all")]
    for t in tags:
        row(f"produce, confluent-kafka, {t}", med("produce", t, "msgs_per_s"), "rec/s", TARGET_PRODUCE_PY)
    for t in tags:
        row(f"produce, kcat, {t}", med("kcat-produce", t, "msgs_per_s"), "rec/s", TARGET_PRODUCE_KCAT)
    for p in (1, 6):
        # Consume figures do not depend on the producer's acks: pool both topics of a partition count.
        for kind, label, target in (("consume-backoff10", "confluent-kafka, fetch.queue.backoff.ms=10", TARGET_CONSUME),
                                    ("consume", "confluent-kafka, client defaults", None),
                                    ("kcat-consume", "kcat -C -e", None),
                                    ("kcat-consume-bigq", "kcat -C -e, big queue", None)):
            for t in [f"p{p} acks=1", f"p{p} acks=all"]:
                rows[(kind, f"p{p}")] += rows.get((kind, t), [])
            row(f"consume, {label}, p{p}", med(kind, f"p{p}", "msgs_per_s"), "rec/s", target)
    for t in tags:
        row(f"broker CPU s per 1M produced, confluent-kafka, {t}", med("produce", t, "cpu_s"), "s",
            TARGET_CPU_PER_M, higher_better=False, check=med("produce", t, "cpu_sched_s"))
    for t in tags:
        row(f"broker CPU s per 1M produced, kcat, {t}", med("kcat-produce", t, "cpu_s"), "s",
            TARGET_CPU_PER_M, higher_better=False, check=med("kcat-produce", t, "cpu_sched_s"))
    for p in (1, 6):
        for kind, label in (("consume-backoff10", "confluent-kafka backoff 10 ms"),
                            ("consume", "confluent-kafka defaults"), ("kcat-consume", "kcat")):
            row(f"broker CPU s per 1M consumed, {label}, p{p}", med(kind, f"p{p}", "cpu_s"), "s",
                TARGET_CPU_PER_M, higher_better=False, check=med(kind, f"p{p}", "cpu_sched_s"))
    lt = "p1 acks=all 1000/s"
    row("latency p50, acks=all, 1,000 rec/s, linger.ms=0", med("latency", lt, "p50_ms"), "ms")
    row("latency p99, acks=all, 1,000 rec/s, linger.ms=0", med("latency", lt, "p99_ms"), "ms",
        TARGET_P99_MS, higher_better=False)
    row("latency p99.9", med("latency", lt, "p999_ms"), "ms")
    for e in env:
        print("# " + "  ".join(f"{k}={v}" for k, v in e.items() if k != "kind"))
    print("\n".join(out))
    other = [d["other_cores"] for (_, tag), ds in rows.items() if " " in tag   # not the pooled rows
             for d in ds if "other_cores" in d]
    if other:
        # CPU used by neither the broker nor the client during a step: other programs competing.
        lat = [d["other_cores"] for d in rows.get(("latency", lt), []) if "other_cores" in d]
        print(f"\nOther programs' CPU during the steps (cores, of {os.cpu_count()}): median "
              f"{statistics.median(other):.2f}, max {max(other):.2f}; during the latency runs: "
              + ", ".join(f"{b:.2f}" for b in lat))
        contended = sum(x > CONTENDED_CORES for x in other)
        if contended:
            print(f"WARNING: other programs used more than {CONTENDED_CORES} cores during {contended} of "
                  f"{len(other)} steps; the medians leave those out where uncontended runs exist (see the "
                  f"notes in the table). On a small machine contention lowers throughput and inflates latency.")
    failed = [d for ds in rows.values() for d in ds if not d.get("ok", True)]
    if failed:
        print(f"\n{len(failed)} step(s) FAILED (errors, missing records or timeouts); see the JSON lines.")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("check")
    s.set_defaults(f=cmd_check)
    s = sub.add_parser("topic")
    s.add_argument("op", choices=["create", "delete", "alter"])
    s.add_argument("name")
    s.add_argument("partitions", type=int, nargs="?", default=1)
    s.add_argument("--replication-factor", type=int, default=1)
    s.add_argument("--config", action="append", default=[], help="a topic config K=V (create, alter)")
    s.set_defaults(f=cmd_topic)
    for name, f in (("produce", cmd_produce), ("consume", cmd_consume), ("latency", cmd_latency),
                    ("kcat-produce", cmd_kcat_produce), ("kcat-consume", cmd_kcat_consume)):
        s = sub.add_parser(name)
        s.add_argument("--topic", required=True)
        s.add_argument("--tag", default="")
        s.add_argument("--broker-pid", type=int, default=0)
        s.add_argument("--timeout", type=float, default=300, help="seconds before the step gives up")
        s.set_defaults(f=f)
        if name in ("produce", "latency", "kcat-produce"):
            s.add_argument("--acks", default="all" if name == "latency" else "1")
        if name in ("produce", "latency"):
            s.add_argument("--size", type=int, default=100)
            s.add_argument("--linger", default="0" if name == "latency" else "5")
        if name in ("produce", "kcat-produce"):
            s.add_argument("--n", type=int, default=1_000_000)
        if name == "produce":
            s.add_argument("--keys", type=int, default=0, help="keys cycled over the records (0: keyless)")
            s.add_argument("--pace", type=float, default=0,
                           help="records per second handed to the client at most (0: as fast as it takes them)")
            s.add_argument("--batch-records", type=int, default=0,
                           help="batch.num.messages: at most this many records per batch (0: librdkafka's default)")
        if name in ("consume", "kcat-consume"):
            s.add_argument("--expect", type=int, required=True)
        if name == "consume":
            s.add_argument("--backoff-ms", type=int, default=None, help="fetch.queue.backoff.ms (librdkafka default 1000)")
        if name == "latency":
            s.add_argument("--rate", type=int, default=1000)
            s.add_argument("--secs", type=float, default=10)
        if name == "kcat-produce":
            s.add_argument("--file", required=True)
        if name == "kcat-consume":
            s.add_argument("--big-queue", action="store_true")
    s = sub.add_parser("batches")
    s.add_argument("data_dir")
    s.add_argument("topic")
    s.add_argument("--tag", default="")
    s.set_defaults(f=cmd_batches)
    s = sub.add_parser("serving")
    s.add_argument("topic")
    s.add_argument("partitions", type=int)
    s.add_argument("--tag", default="")
    s.add_argument("--timeout", type=float, default=120)
    s.set_defaults(f=cmd_serving)
    s = sub.add_parser("datafile")
    s.add_argument("path")
    s.add_argument("--n", type=int, default=1_000_000)
    s.add_argument("--size", type=int, default=100)
    s.set_defaults(f=cmd_datafile)
    s = sub.add_parser("summarize")
    s.add_argument("files", nargs="+")
    s.set_defaults(f=cmd_summarize)
    a = p.parse_args()
    a.f(a)


if __name__ == "__main__":
    main()
