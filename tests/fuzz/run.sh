#!/usr/bin/env bash
# Run every fuzz target of ratorrent's decoders for a bounded time and fail if any crashes.
#
#   tests/fuzz/run.sh                    # every target, 30 s each
#   FUZZ_SECONDS=300 tests/fuzz/run.sh   # longer
#   tests/fuzz/run.sh pex magnet         # only these targets
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Builds
# (optimised, with debug assertions, overflow checks and AddressSanitizer) into $FUZZ_TARGET_DIR (default: tests/fuzz/target). The working
# corpus goes to $FUZZ_CORPUS_DIR/<target> (default: tests/fuzz/corpus, not committed); seeds
# are read from tests/fixtures and tests/fuzz/seeds. A crash leaves its input in
# tests/fuzz/artifacts/<target>/ and makes the script exit 1; reproduce it with
#   cargo +nightly fuzz run --fuzz-dir tests/fuzz <target> tests/fuzz/artifacts/<target>/<file>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fx="$root/tests/fixtures"
seeds="$here/seeds"
seconds="${FUZZ_SECONDS:-30}"
corpus_root="${FUZZ_CORPUS_DIR:-$here/corpus}"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$here/target}"
# one libFuzzer job per target; RSS cap well below the machine's memory
rss_mb="${FUZZ_RSS_MB:-2048}"

all=(bencode metainfo magnet peer_wire extension metadata pex tracker_udp tracker_http lsd)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# Seed directories per target (read-only for libFuzzer: only the first corpus dir is written).
seed_dirs() {
  case "$1" in
    bencode) echo "$seeds/bencode $fx/torrent $fx/libtorrent $fx/tracker_http $seeds/extension $seeds/pex $seeds/tracker_http" ;;
    metainfo) echo "$fx/torrent $fx/libtorrent" ;;
    magnet) echo "$fx/magnet $seeds/magnet" ;;
    peer_wire) echo "$fx/peer_stream $seeds/peer_wire" ;;
    extension) echo "$seeds/extension" ;;
    metadata) echo "$seeds/metadata" ;;
    pex) echo "$seeds/pex" ;;
    tracker_udp) echo "$fx/tracker_udp $seeds/tracker_udp" ;;
    tracker_http) echo "$fx/tracker_http $seeds/tracker_http" ;;
    lsd) echo "$seeds/lsd" ;;
  esac
}

cd "$root"
echo "building the fuzz targets (optimised, debug assertions and overflow checks on, ASan) into $CARGO_TARGET_DIR"
cargo +nightly fuzz build --fuzz-dir "$here"

failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="$corpus_root/$t"
  mkdir -p "$corpus" "$here/artifacts/$t"
  log="$(mktemp)"
  # shellcheck disable=SC2046
  if cargo +nightly fuzz run --fuzz-dir "$here" "$t" "$corpus" $(seed_dirs "$t") -- \
      -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$here/artifacts/$t/" >"$log" 2>&1; then
    status=ok
  else
    status=CRASH
    failed+=("$t")
  fi
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || echo '?')"
  units="$(find "$corpus" -type f | wc -l)"
  line="$(printf '%-13s %-5s %10s execs %7s/s  cov %6s  corpus %5s' "$t" "$status" "$execs" "$rate" "$cov" "$units")"
  summary+=("$line")
  echo "$line"
  if [ "$status" = CRASH ]; then
    { grep -E -A4 'panicked' "$log" | head -n 12; grep -E 'ERROR|SUMMARY|Test unit written' "$log"; } || true
  fi
  rm -f "$log"
done

echo
echo "fuzzed for ${seconds} s per target:"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "CRASHED: ${failed[*]} (inputs in $here/artifacts/)"
  exit 1
fi
echo "no crashes"
