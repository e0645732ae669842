#!/usr/bin/env bash
# Diagnostic (session 7): the four-thread fold test under compute-sanitizer after the rest of its
# file, with every Python thread's stack (faulthandler, untruncated) and, if it stalls, every native
# thread's stack (gdb, where the image has it) and each thread's kernel wait channel.
# Run from the repository root on the device after `bash benchmarks/device_run.sh setup`.
set -u
OUT=${OUT:-/tmp/eagle-out}
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
LOG=$OUT/stall_${1:-run}.log
timeout ${STALL_TIMEOUT:-300} compute-sanitizer --tool memcheck --print-limit 20 \
  python3 -X faulthandler -m pytest -q -p no:cacheprovider -o faulthandler_timeout=120 -rs \
  tests/test_gpu_kernel_fold.py ${STALL_K:+-k "$STALL_K"} >"$LOG" 2>&1 &
top=$!
for i in $(seq 1 ${STALL_WAIT:-170}); do sleep 1; kill -0 $top 2>/dev/null || break; done
if kill -0 $top 2>/dev/null; then
  pid=$(pgrep -f "pytest -q -p no:cacheprovider -o faulthandler" | while read p; do
          [ "$(cat /proc/$p/comm)" = python3 ] && echo $p; done | head -1)
  echo "==== still running after ${STALL_WAIT:-170} s: python pid $pid" >>"$LOG"
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan) $(awk '{print $3}' $t/stat)"; done >>"$LOG" 2>&1
  spy=$(ls .whl/diag/py_spy-*.whl 2>/dev/null | head -1)
  if [ -n "$spy" ]; then  # a carried py-spy wheel: every thread's Python and native frames
    python3 -m pip install -q --no-index --no-deps --target /tmp/pyspy "$spy" >/dev/null 2>&1
    timeout 90 /tmp/pyspy/bin/py-spy dump --native --pid "$pid" >>"$LOG" 2>&1 || echo "py-spy failed ($?)" >>"$LOG"
  fi
  if command -v gdb >/dev/null; then
    timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt 25" >>"$LOG" 2>&1
  else
    echo "no gdb here" >>"$LOG"
  fi
fi
wait $top; echo "exit status $?" >>"$LOG"
grep -E "passed|failed|ERROR SUMMARY|exit status" "$LOG" | tail -5
