#!/usr/bin/env bash
# Run every fuzz target of ratorrent's decoders for a bounded time and fail if any crashes.
#
#   tests/fuzz/run.sh                    # every target, 30 s each
#   FUZZ_SECONDS=300 tests/fuzz/run.sh   # longer
#   FUZZ_RUNS=10000000 FUZZ_SECONDS=86400 nice -n 19 tests/fuzz/run.sh
#                                        # 10 million inputs each (the record: see README)
#   FUZZ_SANITIZER=none tests/fuzz/run.sh  # no AddressSanitizer (about twice as fast)
#   FUZZ_BUILD=0 tests/fuzz/run.sh       # run the targets as last built
#   tests/fuzz/run.sh pex magnet         # only these targets
#   FUZZ_MINIMISE=1 tests/fuzz/run.sh    # after the runs, merge each working corpus into the
#                                        # kept one (tests/fuzz/corpus-min/<target>, committed
#                                        # and replayed by `cargo test --test fuzz_corpus`)
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Builds
# (optimised, with debug assertions, overflow checks and AddressSanitizer) into
# $FUZZ_TARGET_DIR (default: tests/fuzz/target). The working corpus goes to
# $FUZZ_CORPUS_DIR/<target> (default: tests/fuzz/corpus, not committed); seeds are read
# from tests/fixtures, tests/fuzz/seeds and tests/fuzz/corpus-min. The krpc target runs a
# live DHT node, which may send to addresses named in the fuzzed datagrams: it runs in a
# network namespace with only a loopback interface (`unshare -rn`), or is skipped. A crash
# leaves its input in tests/fuzz/artifacts/<target>/ and makes the script exit 1; reproduce
# it with
#   cargo +nightly fuzz run --fuzz-dir tests/fuzz <target> tests/fuzz/artifacts/<target>/<file>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fx="$root/tests/fixtures"
seeds="$here/seeds"
seconds="${FUZZ_SECONDS:-30}"
# stop after this many inputs (-1: only the time limit)
runs="${FUZZ_RUNS:--1}"
sanitizer="${FUZZ_SANITIZER:-address}"
corpus_root="${FUZZ_CORPUS_DIR:-$here/corpus}"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$here/target}"
# one libFuzzer job per target; RSS cap well below the machine's memory
rss_mb="${FUZZ_RSS_MB:-2048}"

all=(bencode metainfo metainfo_v2 hash_messages magnet peer_wire extension metadata pex tracker_udp tracker_http lsd utp webseed krpc mse)
kept_root="$here/corpus-min"
minimise="${FUZZ_MINIMISE:-0}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# Seed directories per target (read-only for libFuzzer: only the first corpus dir is written).
seed_dirs() {
  case "$1" in
    bencode) echo "$seeds/bencode $fx/torrent $fx/libtorrent $fx/tracker_http $seeds/extension $seeds/pex $seeds/tracker_http" ;;
    metainfo) echo "$fx/torrent $fx/libtorrent" ;;
    metainfo_v2) echo "$fx/torrent $fx/libtorrent $seeds/metainfo_v2" ;;
    hash_messages) echo "$seeds/hash_messages" ;;
    magnet) echo "$fx/magnet $seeds/magnet" ;;
    peer_wire) echo "$fx/peer_stream $seeds/peer_wire" ;;
    extension) echo "$seeds/extension" ;;
    metadata) echo "$seeds/metadata" ;;
    pex) echo "$seeds/pex" ;;
    tracker_udp) echo "$fx/tracker_udp $seeds/tracker_udp" ;;
    tracker_http) echo "$fx/tracker_http $seeds/tracker_http" ;;
    lsd) echo "$seeds/lsd" ;;
    utp) echo "$seeds/utp" ;;
    webseed) echo "$seeds/webseed" ;;
    krpc) echo "$seeds/krpc" ;;
    mse) echo "$seeds/mse" ;;
  esac
  [ -d "$kept_root/$1" ] && echo "$kept_root/$1"
  return 0
}

# Run a target's binary; krpc inside a network namespace with only loopback (up).
run_target() {
  local t="$1"
  shift
  local bin="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/$t"
  if [ "$t" = krpc ]; then
    unshare -rn sh -c 'ip link set lo up && exec "$@"' sh "$bin" "$@"
  else
    "$bin" "$@"
  fi
}

cd "$root"
echo "building the fuzz targets (optimised, debug assertions and overflow checks on, sanitizer: $sanitizer) into $CARGO_TARGET_DIR"
if [ "${FUZZ_BUILD:-1}" = 1 ]; then
  # one build for every target; the DHT crate's parser is built without overflow checks,
  # as in the shipped binary (tests/fuzz/Cargo.toml says why)
  cargo +nightly fuzz build --fuzz-dir "$here" --sanitizer "$sanitizer"
else
  echo "FUZZ_BUILD=0: using the targets already built"
fi

failed=()
summary=()
for t in "${targets[@]}"; do
  if [ "$t" = krpc ] && ! unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then
    summary+=("$(printf '%-13s skipped: no network namespace (unshare -rn)' "$t")")
    continue
  fi
  corpus="$corpus_root/$t"
  mkdir -p "$corpus" "$here/artifacts/$t"
  log="$(mktemp)"
  started=$(date +%s)
  # shellcheck disable=SC2046
  if run_target "$t" "$corpus" $(seed_dirs "$t") \
      -max_total_time="$seconds" -runs="$runs" -rss_limit_mb="$rss_mb" -timeout=20 -print_final_stats=1 \
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
  took=$(( $(date +%s) - started ))
  line="$(printf '%-13s %-5s %10s execs %7s/s %6s s  cov %6s  corpus %5s' "$t" "$status" "$execs" "$rate" "$took" "$cov" "$units")"
  summary+=("$line")
  echo "$line"
  if [ "$status" = CRASH ]; then
    { grep -E -A4 'panicked' "$log" | head -n 12; grep -E 'ERROR|SUMMARY|Test unit written' "$log"; } || true
  fi
  rm -f "$log"
  if [ "$minimise" = 1 ] && [ "$status" = ok ]; then
    # keep the smallest inputs that reach every feature the working corpus reaches
    mkdir -p "$kept_root/$t"
    # shellcheck disable=SC2046
    run_target "$t" -merge=1 -rss_limit_mb="$rss_mb" -timeout=20 "$kept_root/$t" "$corpus" >/dev/null 2>&1 \
      || echo "$t: merging into $kept_root/$t failed"
    echo "$t: kept $(find "$kept_root/$t" -type f | wc -l) inputs, $(du -sk "$kept_root/$t" | cut -f1) KiB"
  fi
done

echo
echo "fuzzed for at most ${seconds} s and ${runs} inputs per target (sanitizer: $sanitizer):"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "CRASHED: ${failed[*]} (inputs in $here/artifacts/)"
  exit 1
fi
echo "no crashes"
