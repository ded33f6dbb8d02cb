# Sourced by the benchmark scripts (after scripts/client-python.sh, which sets PY).
#   start_broker DIR [BROKER FLAGS...]   starts $BROKER (target/release/broker) on a free loopback port,
#                                        data in DIR/data, log in DIR/broker.log; sets BPID and
#                                        exports BOOTSTRAP; fails if it is not listening in 30 s.
#                                        With PROTOCOL set (SSL, SASL_SSL, ...) the client listener
#                                        is that, beside a PLAINTEXT CONTROLLER one on loopback
#   stop_broker                          SIGTERM, then waits for the exit (SIGKILL after 60 s);
#                                        sets STOP_SECS to how long the exit took
#   release_bins                         builds the release broker and seedlog unless BROKER and
#                                        SEEDLOG both name binaries (A/B runs); exports both
start_broker() {
  local dir=$1; shift
  local port
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  export BOOTSTRAP=127.0.0.1:$port
  local listen=(--listen "$BOOTSTRAP")
  if [ -n "${PROTOCOL:-}" ] && [ "$PROTOCOL" != PLAINTEXT ]; then
    local controller
    controller=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    listen=(--listeners "$PROTOCOL://$BOOTSTRAP,CONTROLLER://127.0.0.1:$controller")
  fi
  "${BROKER:-target/release/broker}" "${listen[@]}" --data-dir "$dir/data" "$@" 2>>"$dir/broker.log" &
  BPID=$!
  for _ in $(seq 300); do
    grep -q "listening on $BOOTSTRAP" "$dir/broker.log" 2>/dev/null && return 0
    kill -0 "$BPID" 2>/dev/null || { tail -n 20 "$dir/broker.log" >&2; echo "broker exited during start-up" >&2; return 1; }
    sleep 0.1
  done
  tail -n 20 "$dir/broker.log" >&2
  echo "broker not listening on $BOOTSTRAP after 30 s" >&2
  return 1
}

stop_broker() {
  [ -n "${BPID:-}" ] || return 0
  local t0 t1
  t0=$(date +%s%N)
  kill -TERM "$BPID" 2>/dev/null || true
  for _ in $(seq 600); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.01; done
  if kill -0 "$BPID" 2>/dev/null; then kill -KILL "$BPID" 2>/dev/null || true; fi
  wait "$BPID" 2>/dev/null || true
  t1=$(date +%s%N)
  STOP_SECS=$(( (t1 - t0) / 1000000 ))e-3
  BPID=
}

release_bins() {
  local out=${CARGO_TARGET_DIR:-target}
  if [ -z "${BROKER:-}" ] || [ -z "${SEEDLOG:-}" ]; then
    timeout 1800 cargo build --release -p broker-core --bin broker --bin seedlog >&2 || return 1
    BROKER=$out/release/broker SEEDLOG=$out/release/seedlog
  fi
  export BROKER SEEDLOG
}
