# Sourced by the benchmark scripts: sets PY to a Python that can import confluent_kafka
# (PY from the environment first, then target/client-venv, then python3), or leaves it empty.
if [ -z "${PY:-}" ]; then
  for candidate in target/client-venv/bin/python python3; do
    if "$candidate" -c 'import confluent_kafka' >/dev/null 2>&1; then PY=$candidate; break; fi
  done
fi
