#!/usr/bin/env bash
# Runs eagle's GPU work on the device machine (the `device` tool), from the repository root:
#   bash benchmarks/device_run.sh STAGE...     stages: setup prebuilt tests gputests odegpu stiffbench kernels fpmodes sanitize waits check bench seam card cardblocks openclnv mc multigpu distributed distbench odetests odebench gradtests gradbench
# Logs go to $OUT (or /tmp/eagle-out). The carried wheels in .whl/ (cffi, pycparser, pyelftools
# for Python 3.12) are installed into /tmp/site; the cpu and cuda backends are built with CMake and
# installed beside the generated modules there. `prebuilt` instead takes the backends and generated
# modules that the same CMake build installed on the development machine into .site (carried:
# `cmake -S backends -B build -G Ninja -DEAGLE_BACKENDS="cpu;cuda" -DEAGLE_PYTHON_ARTEFACTS=ON
# -DEAGLE_INSTALL_DIR=eagle -DEAGLE_HOTCALL=ON && cmake --build build && cmake --install build
# --prefix .site`), which saves the device the build's minutes.
set -uo pipefail
OUT=${OUT:-/tmp/eagle-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The GPU test stages run in one process, as they were measured: with pytest-xdist installed the
# tests would otherwise spread over a worker per CPU (tests/conftest.py), 16 of them on one GPU.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }-p no:xdist"
rc=0

# MPI for the distributed stage: the MPICH wheel carried in .whl/ when there is one (unpacked by
# hand: pip --target keeps its bin/ but drops its lib/, where libmpi lives; mpi4py>=4, the image's
# or a carried wheel, is pointed at that libmpi), else the image's own mpiexec. Then a 2-rank job
# must see 2 ranks: an mpiexec and an mpi4py of two different MPIs start 2 singletons instead.
mpi_ready() {
  local whl d
  whl=$(ls .whl/mpich-*.whl 2>/dev/null | head -1)
  if [ -n "$whl" ]; then
    python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('/tmp/mpich')" "$whl" || return 1
    d=$(ls -d /tmp/mpich/mpich-*.data/data | head -1)
    chmod +x "$d"/bin/*
    export PATH=$d/bin:$PATH MPI4PY_LIBMPI=$d/lib/libmpi.so.12
  fi
  command -v mpiexec >/dev/null || { echo "no mpiexec here and no .whl/mpich-*.whl to unpack"; return 1; }
  timeout 60 mpiexec -n 2 python3 -c "from mpi4py import MPI; import sys; c = MPI.COMM_WORLD; \
print(f'rank {c.Get_rank()} of {c.Get_size()}:', MPI.Get_library_version().splitlines()[0]); sys.exit(c.Get_size() != 2)" \
    || { echo "mpiexec -n 2 did not start one 2-rank job (mpiexec and mpi4py from different MPIs?)"; return 1; }
}

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
    prebuilt)
      { [ -e .site/eagle/libeagle_cuda.so ] || { echo "no .site/eagle/libeagle_cuda.so: build it here (see the top)"; exit 1; }
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && mkdir -p /tmp/site/eagle && cp -r .site/eagle/. /tmp/site/eagle/ \
        && python3 -c "import eagle, eagle._hotcall as h; print(eagle.backends()); b = eagle.backend('cuda'); b.probe(); print(b, b.build_info); print('eagle._hotcall:', h.CompiledBoundCall)"
      } 2>&1 | tee "$OUT/setup.log" || { echo "prebuilt setup failed"; exit 1; } ;;
    tests)
      python3 -m pytest -q -p no:cacheprovider -rs tests -k "not multigpu" 2>&1 | tee "$OUT/pytest_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    gputests)
      python3 -m pytest -q -p no:cacheprovider tests/test_gpu_cuda.py tests/test_gpu_arrays.py -rs 2>&1 | tee "$OUT/pytest_gpu_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    kernels)
      # Seam minor 7 with no nvcc on PATH: kernels compiled by NVRTC (the toolkit's lib64, or an
      # nvidia-cuda-nvrtc wheel carried in .whl/ and installed into /tmp/site by setup).
      nonvcc=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do [ -n "$d" ] && ! [ -x "$d/nvcc" ] && printf '%s:' "$d"; done)
      PATH="${nonvcc%:}" bash -c 'if command -v nvcc; then echo "nvcc is still on PATH"; exit 1; fi
        python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_kernels.py tests/test_examples.py tests/test_gpu_cuda.py \
        && python3 -m eagle.check cuda cpu \
        && python3 examples/oscillator/oscillator.py --backend cuda --n 1000000 \
        && python3 examples/barrier/barrier.py --backend cuda --n 10000000 \
        && python3 benchmarks/oscillators.py --backend cuda --n 1000000 --reps 5' 2>&1 | tee "$OUT/kernels_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    sanitize)
      # compute-sanitizer memcheck over the GPU tests, one process per test file (a crash or a
      # stall loses one file, not the run); faulthandler prints the stack of a test that stalls.
      # torch and JAX tests are left out: their own runtimes under the sanitizer are not eagle's
      # (torch.cuda.synchronize segfaults under it, in the DLPack round trip). keepalive_off is
      # the proof that the temporaries test can fail; it needs a host function and the main
      # thread to run at once, which the sanitizer serializes, so it has nothing to show there.
      # test_threads_record_and_replay_folded_loops_at_once (four threads) passes alone under the
      # sanitizer (0 errors) and in every plain run, but stalls under the sanitizer after the rest
      # of its file: native stacks (session 7, benchmarks/diag/sanitize_stall.sh) show one thread
      # in the sanitizer's launch callback waiting on a condition variable and the others on
      # libcuda's internal locks, with no eagle lock held. It is left out here.
      for f in ${SANITIZE_FILES:-tests/test_gpu_cuda.py tests/test_drain.py tests/test_gpu_kernels.py}; do
        echo "==== compute-sanitizer memcheck: $f" | tee -a "$OUT/sanitizer.log"
        timeout ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool memcheck --error-exitcode 86 --print-limit 20 \
          python3 -X faulthandler -m pytest -q -p no:cacheprovider -o faulthandler_timeout=100 -rs "$f" \
          -k "${SANITIZE_K:-not torch and not jax and not keepalive_off and not dlpack_round_trips_pick_cuda and not threads_record_and_replay}" 2>&1 | tail -40 | tee -a "$OUT/sanitizer.log"
        st=${PIPESTATUS[0]}; echo "exit status $st" | tee -a "$OUT/sanitizer.log"; rc=$((rc | st))
      done ;;
    waits)
      # issue 28: Ctrl-C during a wait of a cuda kernel that never ends, cuda objects across fork,
      # and the polled waits against the blocking synchronize, interleaved in one process
      python3 -m pytest -q -p no:cacheprovider -rs tests/hostile/test_hostile_waits.py tests/hostile/test_hostile_fork.py \
        2>&1 | tee "$OUT/pytest_waits_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/bench_wait_poll.py --backend cuda --rounds 15 2>&1 | tee "$OUT/bench_wait_poll_cuda_h200.log"
      python3 benchmarks/bench_wait_poll.py --backend cpu --rounds 15 2>&1 | tee "$OUT/bench_wait_poll_cpu_h200host.log" ;;
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
      python3 benchmarks/oscillators.py --backend cuda --n 1000000 --limit --peers --sweep-k --save /tmp/card_cuda.npy \
        2>&1 | tee "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/oscillators.py --backend cuda --n 1000000 --reorder 0.5 2>&1 | tee -a "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/oscillators.py --backend cpu --n 1000000 --reps 1 --compare /tmp/card_cuda.npy \
        2>&1 | tee -a "$OUT/oscillators_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    fpmodes)
      # issue 27: the numerics corpus on cuda == cpu bit for bit (exact), the default mode fuses, the
      # drain without compaction, the examples in exact mode
      python3 -m pytest -q -p no:cacheprovider -rs tests/test_kernel_numerics.py tests/test_gpu_kernels.py \
        tests/test_drain.py 2>&1 | tee "$OUT/pytest_fpmodes_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    cardblocks)
      # issue 27's benchmark method: every implementation in its own block, CUDA events, three modes
      python3 benchmarks/oscillators.py --backend cuda --n 1000000 --blocks --breakdown 2>&1 \
        | tee "$OUT/card_blocks_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    mc)
      # issue 30: <eagle/random.h> and eagle.mean_var on the GPU (cuda == cpu bit for bit), then the
      # Monte-Carlo figures (GBM, the generator against cuRAND, the drained barrier) against CuPy and JAX
      python3 -m pytest -q -p no:cacheprovider -rs tests/test_random.py tests/test_reduce.py \
        tests/test_gpu_kernels.py -k "cuda or gpu or barrier" 2>&1 | tee "$OUT/pytest_mc_h200.log"
      rc=$((rc | ${PIPESTATUS[0]}))
      python3 benchmarks/bench_mc.py --backend cuda --json "$OUT/bench_mc_h200.json" 2>&1 | tee "$OUT/bench_mc_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    multigpu)
      nvidia-smi -L 2>&1 | tee "$OUT/multigpu_h200x2.log"
      python3 -m pytest -q -p no:cacheprovider tests/test_multigpu.py -rs 2>&1 | tee -a "$OUT/multigpu_h200x2.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    distributed)
      # eagle.distributed on two GPUs, one rank each: the MPI tests (cpu backend) and the GPU tests
      # (the card over 2 ranks == 1 rank, bit for bit; device shares gathered).
      log=$OUT/distributed_h200x2.log
      mpi_ready >"$log" 2>&1 || { cat "$log"; rc=1; continue; }
      cat "$log"
      { nvidia-smi -L; mpiexec --version 2>&1 | sed -n 1,2p; python3 -c "import mpi4py; print('mpi4py', mpi4py.__version__)"
      } 2>&1 | tee -a "$log"
      timeout 90 mpiexec -n 2 python3 -m pytest -q -p no:cacheprovider tests/test_distributed_mpi.py 2>&1 | tee -a "$log"
      rc=$((rc | ${PIPESTATUS[0]}))
      timeout 240 python3 -m pytest -q -p no:cacheprovider -rs tests/test_distributed_gpu.py 2>&1 | tee -a "$log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    distbench)
      # the scaling and dynamic-balance figures of issue 16 (one mpiexec job, one GPU per rank)
      mpi_ready >"$OUT/distbench_mpi.log" 2>&1 || { cat "$OUT/distbench_mpi.log"; rc=1; continue; }
      timeout 500 mpiexec -n 2 python3 benchmarks/bench_distributed.py --backend cuda \
        --json "$OUT/bench_distributed_h200x2.json" 2>&1 | tee "$OUT/bench_distributed_h200x2.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    odetests)
      # eagle.ode (issue 26): the scipy / closed-form references, hostile inputs and docs/ode.md, on
      # cpu and (the tests parametrized over the backend) on cuda, with cpu == cuda bit for bit.
      python3 -m pytest -q -p no:cacheprovider -rs tests/test_ode_reference.py tests/test_ode_hostile.py \
        tests/test_docs_ode.py 2>&1 | tee "$OUT/pytest_ode_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    odebench)
      # Lorenz ensembles against diffrax and the hand-written kernel (2^16, 2^20, 2^23). One dtype per
      # device command keeps each under the 10-minute limit: ODEBENCH_ARGS="--dtypes float64"
      # ODEBENCH_TAG=_f64, then float32 / _f32; "--full --impls eagle,hand" for every N without diffrax.
      timeout 590 python3 benchmarks/bench_ode.py --backend cuda --json "$OUT/bench_ode_h200${ODEBENCH_TAG:-}.json" \
        ${ODEBENCH_ARGS:-} 2>&1 | tee "$OUT/bench_ode_h200${ODEBENCH_TAG:-}.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    odegpu)
      # every scheme of the one run on cuda (session 14): cpu == cuda bit for bit in exact mode for the
      # stiff methods, auto, Verner, events that act, dosing, summaries, stiff sensitivities, SDEs; the
      # cuda cases of the stiff, sensitivity, bridge and reference tests; eagle::cuda::Graph.
      XLA_PYTHON_CLIENT_PREALLOCATE=false timeout ${ODEGPU_TIMEOUT:-170} python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/test_ode_device_parity.py \
        tests/test_ode_stiff.py tests/test_ode_sensitivity.py tests/test_ode_bridges.py tests/test_ode_reference.py \
        tests/test_exec_graph.py 2>&1 | tee "$OUT/pytest_odegpu.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    stiffbench)
      # issue 39: ROBER and HIRES against gradsolve (its wheel in .whl/), diffrax Kvaerno5 and scipy Radau
      # at matched achieved error; STIFF_PROBLEMS / STIFF_SIZES / STIFF_IMPLS narrow it.
      XLA_PYTHON_CLIENT_PREALLOCATE=false timeout ${STIFF_TIMEOUT:-330} python3 benchmarks/bench_stiff.py --backend cuda \
        --problems ${STIFF_PROBLEMS:-rober,hires} --sizes ${STIFF_SIZES:-2^14,2^17,2^20} --check 8 --scipy-samples 8 \
        --reps ${STIFF_REPS:-3} --budget ${STIFF_BUDGET:-60} --ladder ${STIFF_LADDER:-1e-4,1e-5,1e-6,1e-7,1e-8,1e-9,1e-10} \
        --impls ${STIFF_IMPLS:-eagle-rodas5p,eagle-kvaerno5,diffrax-kvaerno5,gradsolve-rosenbrock23,gradsolve-rodas5p,scipy-radau} \
        --json "$OUT/bench_stiff_${STIFF_PROBLEMS:-all}.json" 2>&1 | tee "$OUT/bench_stiff_${STIFF_PROBLEMS:-all}.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    gradtests)
      # gradients (issue 40): sensitivities, the discrete adjoint and the bridges, slow ones included,
      # on cpu and cuda (cpu == cuda bit for bit in exact mode: the `device` fixture, marked gpu).
      python3 -m pytest -q -p no:cacheprovider -rs -m "slow or not slow" tests/test_ode_sensitivity.py \
        tests/test_ode_bridges.py tests/test_bench_grad.py 2>&1 | tee "$OUT/pytest_grad_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    gradbench)
      # dL/drho of every Lorenz sample (adaptive Tsit5, FP64): eagle's adjoint and forward sensitivities
      # against diffrax RecursiveCheckpointAdjoint and gradsolve grad_closure (its wheel in .whl/).
      timeout 590 python3 benchmarks/bench_grad.py --backend cuda --sizes ${GRADBENCH_SIZES:-2^16,2^18,2^20} \
        --peer-tol 1e-9 --json "$OUT/bench_grad_h200.json" 2>&1 | tee "$OUT/bench_grad_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    openclnv)
      # issue 31 on the H200: NVIDIA's OpenCL (the image ships libnvidia-opencl with no ICD file),
      # the backend built here through the kit and carried (.oclbuild; the ICD loader in .ocl/lib
      # if the image has none): what the platform offers, eagle.check, the card against cuda.
      mkdir -p /etc/OpenCL/vendors
      nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
      echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
      ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
      ocl=${EAGLE_OPENCL_LIB:-$PWD/.oclbuild/libeagle_opencl.so}
      { echo "ICD: $(cat /etc/OpenCL/vendors/*.icd | tr '\n' ' ')"; timeout 120 python3 benchmarks/diag/opencl_probe.py
        EAGLE_OPENCL_PLATFORM=NVIDIA timeout 300 python3 -m eagle.check "$ocl"
        EAGLE_BACKEND_OPENCL=$ocl EAGLE_OPENCL_PLATFORM=NVIDIA timeout 300 python3 benchmarks/bench_opencl_card.py \
          --kinds cuda,opencl --n 1000000
        echo "the card with unqualified (flat) pointers:"
        EAGLE_BACKEND_OPENCL=$ocl EAGLE_OPENCL_PLATFORM=NVIDIA EAGLE_OPENCL_QUALIFY=0 timeout 300 \
          python3 benchmarks/bench_opencl_card.py --kinds cuda,opencl --n 1000000
        for how in tiles chunks; do
          EAGLE_BACKEND_OPENCL=$ocl EAGLE_OPENCL_PLATFORM=NVIDIA EAGLE_OPENCL_COMPACT=$how timeout 300 \
            python3 benchmarks/bench_opencl_compact.py --kind opencl --sizes 100000,1000000,10000000
        done
        timeout 300 python3 benchmarks/bench_opencl_compact.py --kind cuda --sizes 100000,1000000,10000000
        EAGLE_BACKEND_OPENCL=$ocl EAGLE_OPENCL_PLATFORM=NVIDIA timeout 900 python3 -m pytest -q -p no:cacheprovider \
          -m "opencl and not slow" tests/test_gpu_kernels.py tests/test_drain.py tests/test_activeset.py \
          tests/test_kernel_numerics.py tests/test_random.py tests/test_opencl_address_spaces.py \
          tests/test_opencl_filtering.py tests/test_ode_reference.py tests/test_sde.py tests/test_reduce.py \
          tests/test_stream_none.py tests/test_release_markers.py tests/test_device_kinds.py
      } 2>&1 | tee "$OUT/opencl_nvidia_h200.log"
      rc=$((rc | ${PIPESTATUS[0]})) ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
exit $rc
