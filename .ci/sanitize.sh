#!/usr/bin/env bash
# The cpu tests and the stateful fuzz, run against libeagle_cpu.so built with
# AddressSanitizer + UndefinedBehaviorSanitizer (EAGLE_SANITIZE=ON). Passes only with every test
# passing and zero sanitizer reports. Python itself is not instrumented: the sanitizer runtimes
# are preloaded. Leak detection is off (CPython's allocations at exit are not ours).
#   bash .ci/sanitize.sh [pytest args...]     (default: the cpu API tests, the loader, the fuzz)
# Env: EAGLE_SANITIZE_BUILD (build dir, default build-asan/ in the repo), EAGLE_FUZZ_EXAMPLES (fuzz length).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${EAGLE_SANITIZE_BUILD:-$ROOT/build-asan}
PY=${PYTHON:-python3}

cmake -S backends -B "$BUILD" -G Ninja -DEAGLE_SANITIZE=ON -DEAGLE_PYTHON_ARTEFACTS=ON \
      -DPython_EXECUTABLE="$(command -v "$PY")" >"$BUILD.log" 2>&1 || { tail -30 "$BUILD.log"; exit 1; }
cmake --build "$BUILD" >>"$BUILD.log" 2>&1 || { tail -50 "$BUILD.log"; exit 1; }

# The generated modules (cffi ABI module, seam metadata) from this very header, beside the repo's eagle/.
SITE=$BUILD/site
mkdir -p "$SITE/eagle"
cp "$BUILD"/python/_seam_ffi.py "$BUILD"/python/_seam_meta.py "$SITE/eagle/"
# eagle._hotcall too (the compiled hot call path), built with the same sanitizers.
mkdir -p "$SITE/eagle/_hotcall" && cp "$BUILD"/python/_hotcall/_compiled.abi3.so "$SITE/eagle/_hotcall/"

if [ "$#" -eq 0 ]; then
  set -- tests/test_api_*.py tests/test_cpu_*.py tests/test_fuzz*.py tests/test_loader.py tests/test_hotcall.py
fi

LOGS=$(mktemp -d /tmp/eagle-sanitize.XXXXXX)
status=0
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS="detect_leaks=0:log_path=$LOGS/asan" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan" \
EAGLE_BACKEND_CPU="$BUILD/cpu/libeagle_cpu.so" \
PYTHONPATH="$ROOT:$SITE${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" -m pytest -q -p no:cacheprovider "$@" || status=$?

if compgen -G "$LOGS/*" >/dev/null; then
  echo "sanitizer reports:"
  for f in "$LOGS"/*; do echo "--- $f"; head -60 "$f"; done
  exit 1
fi
echo "sanitizers: zero reports (logs would be in $LOGS)"
exit $status
