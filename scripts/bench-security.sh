#!/usr/bin/env bash
# Produce and consume over SASL_SSL (SCRAM-SHA-256 over TLS 1.3) against PLAINTEXT, with
# confluent-kafka on one release broker (docs/benchmarks.md, "Security").
#
#   scripts/bench-security.sh                 # N=500000 records of 100 bytes, RUNS=1
#   N=200000 RUNS=3 scripts/bench-security.sh
#   BROKER=path/to/broker SEEDLOG=path/to/seedlog scripts/bench-security.sh   # no build (A/B runs)
#
# Per run and protocol, on a fresh broker (data under target/bench-security), one partition:
#   produce   N records, acks=1, linger.ms=5, as fast as the client goes
#   consume   the N records read from offset 0
# Each phase reports records/s and the broker's CPU-seconds (utime+stime from /proc). The
# test certificates (a CA and the broker's key and certificate, for 127.0.0.1) are made with
# the openssl command-line tool for the run; the broker's TLS itself is rustls.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500000}; RUNS=${RUNS:-1}
die() { echo "bench-security: $*" >&2; exit 1; }
. scripts/client-python.sh
. scripts/broker-start.sh
[ -n "${PY:-}" ] || die "no Python with confluent-kafka found (scripts/test.sh installs it in target/client-venv)"
command -v openssl >/dev/null || die "the openssl command makes the run's test certificates: apt-get install openssl"
release_bins || die "cargo build failed"
mkdir -p target/bench-security
W=$(mktemp -d -p target/bench-security run.XXXXXX)
W=$(cd "$W" && pwd)
cleanup() { stop_broker; rm -rf "$W"; }
trap cleanup EXIT
# A CA, and the broker's key and certificate for 127.0.0.1 signed by it.
C=$W/certs; mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=bench-ca -days 2 \
  -keyout "$C/ca.key" -out "$C/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=broker \
  -keyout "$C/broker.key" -out "$C/broker.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$C/ext"
openssl x509 -req -in "$C/broker.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
  -extfile "$C/ext" -out "$C/broker.crt" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$C/broker.key" -out "$C/broker.p8" 2>/dev/null
cat "$C/broker.p8" "$C/broker.crt" >"$C/keystore.pem"
JAAS='org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
RESULTS=$W/results.jsonl
for run in $(seq "$RUNS"); do
  for PROTOCOL in PLAINTEXT SASL_SSL; do
    mkdir -p "$W/$run-$PROTOCOL"
    if [ "$PROTOCOL" = PLAINTEXT ]; then
      start_broker "$W/$run-$PROTOCOL" || die "the broker did not start"
    else
      start_broker "$W/$run-$PROTOCOL" --ssl-keystore-location "$C/keystore.pem" --ssl-truststore-location "$C/ca.pem" \
        --sasl-jaas-config "$JAAS" --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]' || die "the broker did not start"
    fi
    "$PY" scripts/bench_security.py run --bootstrap "$BOOTSTRAP" --protocol "$PROTOCOL" --ca "$C/ca.pem" --pid "$BPID" --n "$N" >>"$RESULTS" || die "run $run $PROTOCOL failed"
    tail -n 1 "$RESULTS"
    stop_broker
  done
done
"$PY" scripts/bench_security.py summarize "$RESULTS"
