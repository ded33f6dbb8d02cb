#!/usr/bin/env bash
# The README's test command, and CI's (.ci/run calls it). On a fresh machine it first installs
# what the real-client tests need (broker-core/tests/all/support.rs: kcat from apt,
# confluent-kafka + kafka-python in target/client-venv, kafkajs in target/node-clients) and what the `sim view` browser test
# needs (sim/tests/all/view.rs: Debian's chromium), Debian's Go and sarama for the old-client test, and promtool for the /metrics tests, then runs every test: the workspace's
# (real build) and the simulated build's. Each install is skipped when its tool already works,
# so a second run goes straight to the tests. Arguments are passed to both cargo commands
# (e.g. `scripts/test.sh -- --nocapture`).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; Seedlog needs a Rust toolchain (rustup, stable >= 1.85)" >&2
  exit 1
fi
cargo --version

# apt-get as root: directly when we are root, else through sudo if there is one.
apt_updated=no
apt_install() {
  local root=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "error: need root or sudo to apt-get install $*" >&2
      exit 1
    fi
    root=(sudo -n)
  fi
  if [ "$apt_updated" = no ]; then
    "${root[@]}" apt-get update -qq
    apt_updated=yes
  fi
  "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# kcat: librdkafka's command-line producer and consumer.
if ! command -v kcat >/dev/null 2>&1; then
  apt_install kcat
fi
kcat -V | head -n 1

# Debian's Go and sarama 1.22: the old-client test builds a sarama group consumer with them
# (broker-core/tests/clients/sarama_group, GOPATH mode).
if ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/github.com/Shopify/sarama ]; then
  apt_install golang-go golang-github-shopify-sarama-dev
fi

# chromium: `cargo simtest` loads a `sim view` page in it, headless.
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi

# The Python clients, in a venv the tests look for (after $SEEDLOG_PYTHON, before python3);
# lz4 and xxhash are kafka-python's lz4 codec (the old-client test's lz4 message sets).
venv=target/client-venv
if ! "$venv/bin/python" -c 'import confluent_kafka, kafka' >/dev/null 2>&1; then
  if ! command -v python3 >/dev/null 2>&1; then
    apt_install python3 python3-venv
  fi
  rm -rf "$venv"
  if ! python3 -m venv "$venv"; then
    # Debian's python3 makes venvs (with pip) only once python3-venv is installed.
    rm -rf "$venv"
    apt_install python3-venv
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check confluent-kafka kafka-python
fi
if ! "$venv/bin/python" -c 'import lz4, xxhash' >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check lz4 xxhash
fi
"$venv/bin/python" -c 'import confluent_kafka, kafka; print("confluent-kafka", confluent_kafka.__version__, "kafka-python", kafka.__version__)'

# kafkajs (a pure-JavaScript client) in target/node-clients, for the tests that run it
# (broker-core/tests/clients/*.js); Node.js and npm from apt when missing.
node_modules=target/node-clients/node_modules
if ! NODE_PATH="$node_modules" node -e "require('kafkajs')" >/dev/null 2>&1; then
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm
  fi
  npm install --prefix target/node-clients --no-audit --no-fund --silent kafkajs@2.2.4
fi
echo "node $(node --version), kafkajs $(NODE_PATH="$node_modules" node -p "require('kafkajs/package.json').version")"
export SEEDLOG_NODE_MODULES="$PWD/$node_modules"

# promtool (Prometheus's linter) for the /metrics tests: Debian's prometheus package unpacked
# into target/tools (not installed: no service, no dependencies pulled in).
promtool=target/tools/prometheus/usr/bin/promtool
if ! "$promtool" --version >/dev/null 2>&1; then
  mkdir -p target/tools
  (cd target/tools && rm -f prometheus_*.deb && { apt-get download prometheus >/dev/null 2>&1 || { apt_install --download-only prometheus >/dev/null && cp /var/cache/apt/archives/prometheus_*.deb .; }; } && dpkg -x prometheus_*.deb prometheus && rm -f prometheus_*.deb)
fi
"$promtool" --version | head -n 1
export SEEDLOG_PROMTOOL="$PWD/$promtool"

# The tests find this venv themselves; naming it makes a stale $SEEDLOG_PYTHON harmless.
export SEEDLOG_PYTHON="$PWD/$venv/bin/python"
cargo test --workspace "$@"
cargo simtest "$@"
