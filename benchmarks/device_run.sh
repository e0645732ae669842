#!/usr/bin/env bash
# Runs eagle's GPU work on the device machine (the `device` tool), from the repository root:
#   bash benchmarks/device_run.sh STAGE...     stages: setup tests gputests check bench seam card multigpu
# Logs go to $OUT (or /tmp/eagle-out). The carried wheels in .whl/ (cffi, pycparser, pyelftools
# for Python 3.12) are installed into /tmp/site; the cpu and cuda backends are built with CMake and
# installed beside the generated modules there.
set -uo pipefail
OUT=${OUT:-/tmp/eagle-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rc=0
for stage in "$@"; do
  case $stage in
    setup)
      { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/site .whl/*.whl \
        && hot=ON && { python3 -c "import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'],'Python.h')))" || hot=OFF; } \
        && cmake -S backends -B /tmp/eagle-build -G Ninja -DEAGLE_BACKENDS="cpu;cuda" \
             -DEAGLE_PYTHON_ARTEFACTS=ON -DEAGLE_INSTALL_DIR=eagle -DEAGLE_HOTCALL=$hot \
        && cmake --build /tmp/eagle-build \
        && cmake --install /tmp/eagle-build --prefix /tmp/site \
        && { [ -e /tmp/site/eagle/_hotcall/_compiled.abi3.so ] || ! [ -e .whl/_compiled.abi3.so ] \
             || { echo "CPython headers missing here: using the carried stable-ABI .whl/_compiled.abi3.so"; \
                  mkdir -p /tmp/site/eagle/_hotcall && cp .whl/_compiled.abi3.so /tmp/site/eagle/_hotcall/; }; } \
        && python3 -c "import eagle, eagle._hotcall as h; print(eagle.backends()); b = eagle.backend('cuda'); b.probe(); print(b, b.build_info); print('eagle._hotcall:', h.CompiledBoundCall)"
      } 2>&1 | tee "$OUT/setup.log" || { echo "setup failed"; exit 1; } ;;
    tests)
      python3 -m pytest -q -p no:cacheprovider -rs tests -k "not multigpu" 2>&1 | tee "$OUT/pytest_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    gputests)
      python3 -m pytest -q -p no:cacheprovider tests/test_gpu_cuda.py tests/test_gpu_arrays.py -rs 2>&1 | tee "$OUT/pytest_gpu_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    check)
      python3 -m eagle.check cuda cpu 2>&1 | tee "$OUT/check_cuda_h200.log"; rc=$((rc | ${PIPESTATUS[0]}))
      python3 -m eagle.check cuda --json > "$OUT/check_cuda_h200.json" 2>/dev/null ;;
    bench)
      python3 benchmarks/bench_cuda.py --rounds 7 --out "$OUT/bench_cuda_h200.md" 2>&1 | tee "$OUT/bench_cuda.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    seam)
      python3 benchmarks/bench_seam_call.py --rounds 41 2>&1 | tee "$OUT/bench_seam_call_h200host.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    card)
      python3 benchmarks/oscillators.py --backend cuda --n 1000000 --peers --sweep-k --save /tmp/card_cuda.npy \
        2>&1 | tee "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/oscillators.py --backend cuda --n 1000000 --reorder 0.5 2>&1 | tee -a "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/oscillators.py --backend cpu --n 1000000 --reps 1 --compare /tmp/card_cuda.npy \
        2>&1 | tee -a "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    multigpu)
      nvidia-smi -L 2>&1 | tee "$OUT/multigpu_h200x2.log"
      python3 -m pytest -q -p no:cacheprovider tests/test_multigpu.py -rs 2>&1 | tee -a "$OUT/multigpu_h200x2.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
exit $rc
