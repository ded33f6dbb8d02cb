#!/usr/bin/env python3
"""The client side of scripts/bench-stall.sh: does one partition's disk work stall its node?

    bench_stall.py run --loaded A --other B --topic load --probe probe --record-bytes N --secs S

While a confluent-kafka producer writes records of N bytes into `load` on broker A as fast as it
can (acks=1), two probes run against A and, the same way, against B (another broker process on
the same machine and disk, idle): a Metadata round trip on a raw socket every 2 ms, and an acks=1
produce of one 100-byte record to `probe` every 10 ms (another partition of the same node). It
prints one JSON line per broker and probe: p50, p99 and max in ms, and how many round trips, and
exits non-zero if a probe failed or the load producer wrote nothing. Every wait has a deadline.

With --loaded-metrics and --other-metrics (each broker's `--metrics-listen` address), each line
also says how many of that API's requests on that broker (Metadata; Produce, the load's
included) waited over 100 ms for the node (`queue`: the node's gate) or spent over 100 ms in
their decisions and disk work (`local`) during the run, from the brokers' own
`seedlog_request_phase_seconds` histograms: a probe's stall that neither counts happened
outside the broker's decisions (the machine, the network stack, the client).
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time
import urllib.request


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def metadata_probe(addr, stop, out, errors):
    """Metadata v1, no topics: answered from the node's image alone."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    cid = 0
    try:
        while not stop.is_set():
            cid += 1
            client = b"stall-probe"
            body = struct.pack(">hhih", 3, 1, cid, len(client)) + client + struct.pack(">i", 0)
            t0 = time.perf_counter()
            s.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", recv_exact(s, 4))[0]
            frame = recv_exact(s, size)
            out.append((time.perf_counter() - t0) * 1000)
            if struct.unpack(">i", frame[:4])[0] != cid:
                raise RuntimeError("correlation id mismatch")
            time.sleep(0.002)
    except Exception as e:  # the probe's failure is the benchmark's failure
        errors.append(f"metadata probe of {addr}: {e}")
    finally:
        s.close()


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


def produce_probe(addr, topic, stop, out, errors):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": addr, "acks": "1", "linger.ms": 0, "enable.idempotence": False})
    payload = b"p" * 100
    try:
        while not stop.is_set():
            done = []
            t0 = time.perf_counter()
            p.produce(topic, payload, partition=0, on_delivery=lambda err, msg: done.append(err))
            deadline = time.time() + 30
            while not done and time.time() < deadline:
                p.poll(0.0005)
            if not done or done[0] is not None:
                raise RuntimeError(f"delivery failed: {done[0] if done else 'timed out'}")
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.01)
    except Exception as e:
        errors.append(f"produce probe of {addr}: {e}")


def load(addr, topic, record_bytes, partitions, stop, counter, errors):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": addr, "acks": "1", "linger.ms": 5, "enable.idempotence": False,
                  "message.max.bytes": max(1_000_000, record_bytes + 1024), "queue.buffering.max.kbytes": 262144})
    payload = b"x" * record_bytes
    failed = []
    n = 0

    def cb(err, msg):
        if err is None:
            counter[0] += 1
        else:
            failed.append(err)
    try:
        while not stop.is_set():
            try:
                p.produce(topic, payload, partition=n % partitions, on_delivery=cb)
            except BufferError:
                p.poll(0.001)
                continue
            n += 1
            p.poll(0)
        p.flush(60)
        if failed:
            raise RuntimeError(f"{len(failed)} records failed: {failed[0]}")
    except Exception as e:
        errors.append(f"load on {addr}: {e}")


def phases_over(url, threshold="0.1"):
    """{(api, phase): requests over `threshold` s} from a broker's /metrics."""
    text = urllib.request.urlopen(f"http://{url}/metrics", timeout=10).read().decode()
    count, under = {}, {}
    for line in text.splitlines():
        if not line.startswith("seedlog_request_phase_seconds"):
            continue
        name, value = line.rsplit(" ", 1)
        labels = dict(kv.split("=", 1) for kv in name[name.index("{") + 1:name.rindex("}")].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        key = (labels.get("api"), labels.get("phase"))
        if name.startswith("seedlog_request_phase_seconds_count"):
            count[key] = float(value)
        elif name.startswith("seedlog_request_phase_seconds_bucket") and labels.get("le") == threshold:
            under[key] = float(value)
    return {k: int(count[k] - under.get(k, 0)) for k in count}


def cmd_run(a):
    metrics = {"loaded": a.loaded_metrics, "other": a.other_metrics}
    before = {role: phases_over(url) for role, url in metrics.items() if url}
    stop = threading.Event()
    errors, delivered = [], [0]
    series = {}
    threads = [threading.Thread(target=load, args=(a.loaded, a.topic, a.record_bytes, a.partitions, stop, delivered, errors))]
    for role, addr in (("loaded", a.loaded), ("other", a.other)):
        series[(role, "metadata")] = []
        series[(role, "produce-other-partition")] = []
        threads.append(threading.Thread(target=metadata_probe, args=(addr, stop, series[(role, "metadata")], errors)))
        threads.append(threading.Thread(target=produce_probe, args=(addr, a.probe, stop, series[(role, "produce-other-partition")], errors)))
    for t in threads:
        t.start()
    time.sleep(a.secs)
    stop.set()
    for t in threads:
        t.join(120)
    hung = [t for t in threads if t.is_alive()]
    ok = not errors and not hung and delivered[0] > 0
    after = {role: phases_over(url) for role, url in metrics.items() if url}
    for (role, probe), xs in series.items():
        rec = {"kind": "stall", "mode": a.mode, "record_bytes": a.record_bytes, "broker": role, "probe": probe, "n": len(xs),
               "p50_ms": round(percentile(xs, 0.5) or -1, 3), "p99_ms": round(percentile(xs, 0.99) or -1, 3), "max_ms": round(max(xs) if xs else -1, 3),
               "load_records": delivered[0], "load_mib_per_s": round(delivered[0] * a.record_bytes / a.secs / 2**20, 1)}
        if role in after:
            api = "Metadata" if probe == "metadata" else "Produce"
            for phase in ("queue", "local"):
                key = (api, phase)
                rec[f"{phase}_over_100ms"] = after[role].get(key, 0) - before[role].get(key, 0)
        print(json.dumps(rec), flush=True)
    for e in errors:
        print(f"bench_stall: {e}", file=sys.stderr)
    if hung:
        print(f"bench_stall: {len(hung)} threads did not stop within 120 s", file=sys.stderr)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--loaded", required=True)
    r.add_argument("--other", required=True)
    r.add_argument("--topic", default="load")
    r.add_argument("--probe", default="probe")
    r.add_argument("--record-bytes", type=int, default=262144)
    r.add_argument("--partitions", type=int, default=1, help="the loaded topic's partitions, written round robin")
    r.add_argument("--secs", type=float, default=20)
    r.add_argument("--mode", default="large-records")
    r.add_argument("--loaded-metrics", help="broker A's --metrics-listen address")
    r.add_argument("--other-metrics", help="broker B's --metrics-listen address")
    a = ap.parse_args()
    sys.exit(cmd_run(a))


if __name__ == "__main__":
    main()
