#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from real client traffic and the logs it leaves.

Starts a broker (the binary given) on a free port, advertised through a loopback proxy that
records what each client connection sends; runs kcat, confluent-kafka and kafka-python (the
scripts the test suite runs, small sizes) through the proxy; stops the broker with SIGTERM.
Then writes, under fuzz/corpus/:

  request_frames/<client>-<n>   the first frames of each connection, size prefixes included
                                (the target reads a connection's bytes the same way)
  record_batch/<topic>-<n>      each batch of the data directory's segments, after the
                                target's flags byte (0: lengths and CRC as stored)
  log_recovery/<partition>      each partition directory (segments, indexes, checkpoint) in
                                the target's entry format (sim::fuzzing::log_files)

Usage: fuzz/seeds/capture.py BROKER_BINARY [PYTHON] [--only LABEL,...]   (PYTHON: one with
confluent_kafka and kafka-python, e.g. target/client-venv/bin/python). Needs kcat. `--only` runs
just the named clients (e.g. `--only share,consumer-protocol` to seed a new API's sessions
without rewriting the rest) and writes only their request_frames seeds.
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus"
CLIENTS = ROOT / "broker-core" / "tests" / "clients"
# What one request_frames seed holds at most (the target reads 64 frames; libFuzzer's
# -max_len in scripts/fuzz.sh is 64 KiB).
FRAMES_MAX = 64
SEED_BYTES_MAX = 60 * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Recorder:
    """Keeps whole frames a client sent on one connection, within the seed bounds."""

    def __init__(self, label):
        self.label, self.buf, self.frames, self.size = label, b"", [], 0

    def feed(self, data):
        self.buf += data
        while len(self.buf) >= 4:
            n = struct.unpack(">i", self.buf[:4])[0]
            if len(self.buf) < 4 + n:
                return
            frame, self.buf = self.buf[: 4 + n], self.buf[4 + n :]
            if len(self.frames) < FRAMES_MAX and self.size + len(frame) <= SEED_BYTES_MAX:
                self.frames.append(frame)
                self.size += len(frame)


class Proxy(threading.Thread):
    def __init__(self, port, broker_port):
        super().__init__(daemon=True)
        self.port, self.broker_port, self.label, self.sessions = port, broker_port, "none", []
        self.lock = threading.Lock()

    def run(self):
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", self.port))
        srv.listen(64)
        while True:
            client, _ = srv.accept()
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            rec = Recorder(self.label)
            with self.lock:
                self.sessions.append(rec)
            threading.Thread(target=pump, args=(client, upstream, rec), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, None), daemon=True).start()


def pump(src, dst, rec):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if rec:
                rec.feed(data)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def run(label, proxy, cmd, stdin=None):
    if ONLY and label not in ONLY:
        return
    proxy.label = label
    print("capturing", label, file=sys.stderr)
    r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=180)
    if r.returncode != 0:
        print(r.stdout.decode()[-2000:], r.stderr.decode()[-2000:], file=sys.stderr)
        raise SystemExit(f"{label} failed")
    time.sleep(0.5)


def log_files_entry(kind, base, data):
    return bytes([kind]) + struct.pack("<Q", base) + struct.pack("<I", len(data)) + data


def batches(data):
    at = 0
    while len(data) - at >= 12:
        n = struct.unpack(">i", data[at + 8 : at + 12])[0] + 12
        if n < 61 or at + n > len(data):
            return
        yield data[at : at + n]
        at += n


ONLY = set()


def main():
    global ONLY
    args = sys.argv[1:]
    if "--only" in args:
        i = args.index("--only")
        ONLY = set(args[i + 1].split(","))
        del args[i : i + 2]
    broker, python = args[0], args[1] if len(args) > 1 else sys.executable
    bport, pport = free_port(), free_port()
    proxy = Proxy(pport, bport)
    proxy.start()
    boot = f"127.0.0.1:{pport}"
    with tempfile.TemporaryDirectory() as data:
        b = subprocess.Popen([broker, "--node-id", "0", "--listen", f"127.0.0.1:{bport}", "--advertised", boot, "--data-dir", data, "--num-partitions", "2"], stderr=subprocess.DEVNULL)
        time.sleep(2)
        try:
            py = lambda script, *args: [python, "-u", str(CLIENTS / script), "--bootstrap", boot, *args]
            run("kcat-produce", proxy, ["kcat", "-P", "-b", boot, "-t", "kc", "-K:", "-X", "acks=all"], b"k1:hello\nk2:world\nk3:\n")
            run("kcat-produce-gzip", proxy, ["kcat", "-P", "-b", boot, "-t", "kcz", "-z", "gzip", "-K:"], b"a:1\nb:2\nc:3\n")
            run("kcat-produce-snappy", proxy, ["kcat", "-P", "-b", boot, "-t", "kcs", "-z", "snappy", "-K:"], b"a:1\nb:2\nc:3\n")
            run("kcat-consume", proxy, ["kcat", "-C", "-b", boot, "-t", "kc", "-o", "beginning", "-e"])
            run("kcat-group", proxy, ["kcat", "-b", boot, "-G", "kcg", "-X", "auto.offset.reset=earliest", "-e", "kc"])
            run("kcat-metadata", proxy, ["kcat", "-L", "-b", boot])
            run("confluent", proxy, py("confluent_roundtrip.py", "--topic", "cf", "--n", "12"))
            run("kafka-python", proxy, py("kafka_python_roundtrip.py", "--topic", "kp", "--n", "12"))
            run("kafka-python-group", proxy, py("kafka_python_group.py", "--topic", "kpg", "--group", "g1", "--n", "12", "--m", "4"))
            run("kafka-python-old", proxy, py("old_clients.py", "--n", "12"))
            run("admin", proxy, py("admin.py"))
            run("compacted", proxy, py("compacted_topic.py", "--topic", "cmp"))
            run("compacted-lz4", proxy, py("compacted_topic.py", "--topic", "cmp-lz4", "--compression", "lz4"))
            run("compacted-zstd", proxy, py("compacted_topic.py", "--topic", "cmp-zstd", "--compression", "zstd"))
            run("consumer-protocol", proxy, py("consumer_protocol.py", "--topic", "cpt", "--group", "cpg", "--n", "400"))
            run("share", proxy, py("share_group.py", "--topic", "sht", "--group", "shg", "--n", "2000"))
        finally:
            b.send_signal(signal.SIGTERM)
            b.wait(timeout=30)
        frames = CORPUS / "request_frames"
        frames.mkdir(parents=True, exist_ok=True)
        counts = {}
        with proxy.lock:
            for rec in proxy.sessions:
                if rec.frames and (not ONLY or rec.label in ONLY):
                    n = counts[rec.label] = counts.get(rec.label, 0) + 1
                    (frames / f"{rec.label}-{n}").write_bytes(b"".join(rec.frames))
        if ONLY:
            print({k: len(list((CORPUS / k).iterdir())) for k in ("request_frames",)})
            return
        rb, lr = CORPUS / "record_batch", CORPUS / "log_recovery"
        rb.mkdir(parents=True, exist_ok=True)
        lr.mkdir(parents=True, exist_ok=True)
        for part in sorted(Path(data).glob("*/")):
            entries, i = [], 0
            for f in sorted(part.iterdir()):
                kind = {".log": 0, ".index": 1, ".timeindex": 2}.get(f.suffix)
                if f.name == "recovery-point-offset-checkpoint":
                    kind = 3
                elif f.name == "cleaner-offset-checkpoint":
                    kind = 4
                if kind is None:
                    continue
                raw = f.read_bytes()
                base = int(f.name.split(".")[0]) if kind < 3 else 0
                entries.append(log_files_entry(kind, base, raw[: SEED_BYTES_MAX // 2]))
                if kind == 0:
                    for batch in batches(raw):
                        i += 1
                        if i <= 8:
                            (rb / f"{part.name}-{i}").write_bytes(b"\0" + batch)
            seed = b"".join(entries)
            if 0 < len(seed) <= SEED_BYTES_MAX:
                (lr / part.name).write_bytes(seed)
    print({k: len(list((CORPUS / k).iterdir())) for k in ("request_frames", "record_batch", "log_recovery")})


if __name__ == "__main__":
    main()
