#!/usr/bin/env bash
# Fuzzes one target for a time budget (docs/fuzzing.md):
#
#     scripts/fuzz.sh TARGET MINUTES [JOBS]
#     RUNS=10000000 scripts/fuzz.sh TARGET 60    # stop at 10 M executions or an hour, whichever first
#
# TARGET is one of: request_frames request_sequence log_recovery record_batch sasl tls scenario trace
# (`cargo +nightly fuzz list` from fuzz/). Needs nightly Rust and cargo-fuzz
# (`cargo install cargo-fuzz`). The run starts from the checked-in corpus (fuzz/corpus/TARGET)
# and the fixed crash inputs (fuzz/regressions/TARGET), writes what it discovers to the
# git-ignored fuzz/work/TARGET, and at the end merges into fuzz/corpus/TARGET only the inputs
# that add coverage (commit them: the stable replay tests then run them too). A crash is
# written to fuzz/artifacts/TARGET/; once fixed, move it to fuzz/regressions/TARGET/.
# The last lines of libFuzzer's log (executions, coverage) go to fuzz/work/TARGET.log.
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET MINUTES [JOBS]}
minutes=${2:?usage: scripts/fuzz.sh TARGET MINUTES [JOBS]}
jobs=${3:-1}
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
if [ -n "${RUNS:-}" ]; then parallel+=(-runs="$RUNS"); fi
cd "$(dirname "$0")/../fuzz"
mkdir -p "work/$target" "corpus/$target" "regressions/$target"
# No sanitizer: the code under test is safe Rust, and without ASan a target runs about twice
# as fast. Debug assertions on, so integer overflow panics. Allocation is bounded by
# -rss_limit_mb (a request may make the broker touch at most its limits, never gigabytes).
cargo +nightly fuzz build -s none -a "$target"
# 64 KiB inputs: a whole client session of frames, a batch with room to spare, a few segments.
cargo +nightly fuzz run -s none -a "$target" "work/$target" "corpus/$target" "regressions/$target" -- \
    -max_total_time=$((minutes * 60)) -max_len=65536 -rss_limit_mb=2048 -timeout=30 \
    "${parallel[@]}" -print_final_stats=1 2>&1 | tee "work/$target.log" | grep -E "^#[0-9]+.*(pulse|DONE)|stat::|ERROR|panicked" || true
# Add to the checked-in corpus only inputs that reach new edges (-use_counters=0: hit counts
# do not count), which keeps the stable replay short; the seeds from real clients stay.
cargo +nightly fuzz run -s none -a "$target" "corpus/$target" "work/$target" -- -merge=1 -use_counters=0 -max_len=65536 -rss_limit_mb=2048 2>&1 | grep -E "MERGE-OUTER: .* new" || true
ls "artifacts/$target" 2>/dev/null | sed "s|^|crash input: fuzz/artifacts/$target/|" || true
