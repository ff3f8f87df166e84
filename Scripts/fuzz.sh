#!/usr/bin/env bash
# `make fuzz`: builds each fuzz target (Fuzz/<Target>/main.swift, in Package.swift only with FORGE_FUZZ=1)
# with libFuzzer and AddressSanitizer in .build-fuzz/, then runs each for FUZZ_SECONDS over its seed
# corpus (Fuzz/Corpus/<Target>/). An input that crashes, leaks, or takes over 1 s fails the run, its
# path printed; a target that finds nothing passes. Without libFuzzer in the toolchain: exit 69.
#
#   Scripts/fuzz.sh [TARGET...]      every target when none is named
#   FUZZ_SECONDS=20 Scripts/fuzz.sh  (default 300)
#   Scripts/fuzz.sh --build-only
#   FUZZ_SCRATCH=.build-fuzz-clean Scripts/fuzz.sh --build-only   (another scratch folder, to time a clean build)
set -uo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
SECONDS_EACH=${FUZZ_SECONDS:-300}
SCRATCH=${FUZZ_SCRATCH:-.build-fuzz}
FLAGS=(-c debug --scratch-path "$SCRATCH" -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
ALL_TARGETS=(FuzzJSONShape FuzzIdentifiers FuzzSimulatorFile FuzzTokenLine FuzzProviderToken FuzzInboxAPI FuzzHTTP2Server)
export FORGE_FUZZ=1
# A Swift runtime error (a trap) goes straight to libFuzzer's crash handler, which saves the input:
# Swift's own backtracer, run under AddressSanitizer, can hang or fail reading the crashed stack.
export SWIFT_BACKTRACE=enable=no

build_only=false
targets=()
for argument in "$@"; do
  case $argument in
    --build-only) build_only=true ;;
    *) targets+=("$argument") ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")

# libFuzzer ships with the toolchain's compiler-rt on Linux (not with Xcode's on macOS): a one-line
# entry point must compile and link with -sanitize=fuzzer, or there is nothing to run.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '@_cdecl("LLVMFuzzerTestOneInput") public func f(_ d: UnsafePointer<UInt8>?, _ n: Int) -> CInt { 0 }\n' > "$probe/probe.swift"
if ! (cd "$probe" && "$SWIFT"c -sanitize=fuzzer,address -parse-as-library probe.swift -o probe) >"$probe/log" 2>&1; then
  echo "fuzz: this toolchain cannot build with -sanitize=fuzzer (no libFuzzer); nothing was fuzzed" >&2
  sed 's/^/  /' "$probe/log" | tail -5 >&2
  exit 69
fi

start=$(date +%s)
for target in "${targets[@]}"; do
  echo "fuzz: building $target"
  # ld.gold warns once per ASan helper symbol it cannot export; those lines say nothing about ForgePush.
  "$SWIFT" build "${FLAGS[@]}" --product "$target" 2>&1 | grep -v "Cannot export local symbol"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "fuzz: $target did not build" >&2; exit 1; }
done
echo "fuzz: built ${#targets[@]} target(s) in $(( $(date +%s) - start )) s"
$build_only && exit 0

bin=$("$SWIFT" build "${FLAGS[@]}" --show-bin-path)
failed=()
for target in "${targets[@]}"; do
  work="$SCRATCH/fuzz/$target"
  # New inputs go to the first folder, outside git; the checked-in seeds are only read.
  mkdir -p "$work/corpus" "$work/artifacts"
  # A dictionary (Fuzz/Dictionaries/<Target>.dict) names the words and edge values a mutation is
  # unlikely to spell by chance: JSON tokens, claim names, Int64.min.
  dictionary=()
  [ -f "Fuzz/Dictionaries/$target.dict" ] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
  echo "fuzz: $target for ${SECONDS_EACH}s"
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions="$PWD/Fuzz/lsan-suppressions.txt" "$bin/$target" "$work/corpus" "Fuzz/Corpus/$target" "${dictionary[@]}" \
    -max_total_time="$SECONDS_EACH" -timeout=1 -detect_leaks=1 -rss_limit_mb=4096 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$work/log" 2>&1
  status=$?
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec)|^Done ' "$work/log" | sed "s/^/  $target: /"
  if [ $status -ne 0 ]; then
    failed+=("$target")
    echo "fuzz: $target FAILED (exit $status); the input:" >&2
    grep -E 'Test unit written to|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|SUMMARY' "$work/log" | sed 's/^/  /' >&2
    echo "  log: $work/log" >&2
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} target(s) ran ${SECONDS_EACH}s each; nothing found"
