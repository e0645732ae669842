#!/usr/bin/env bash
# one device command (session 10's last lease): everything GPU, most important first, each bounded
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt
B="python3 -W ignore benchmarks/bench_ode.py --backend cuda"
el ode-eagle-hand; timeout 100 $B --sizes 2^20,2^23 --reps 7 --impls eagle,hand --json $OUT/ode_eh.json > $OUT/ode_eh.log 2>&1
el ode-diffrax-adaptive; timeout 110 $B --sizes 2^23 --reps 3 --impls diffrax --methods tsit5,rk45 --json $OUT/ode_dfx.json > $OUT/ode_dfx.log 2>&1
el ode-spc; for k in 8 32; do EAGLE_ODE_BENCH_KW="{\"steps_per_call\": $k}" timeout 30 $B --sizes 2^23 --reps 5 --impls eagle --methods tsit5,rk45 --dtypes float64 2>&1 | grep " ms" | sed "s/^/spc=$k /"; done >> $OUT/ode_eh.log
el check; timeout 90 python3 -m eagle.check cuda > $OUT/check_cuda.log 2>&1; tail -3 $OUT/check_cuda.log
el gputests; timeout 150 python3 -m pytest -q -p no:cacheprovider -rs -x -m "gpu" tests/test_ode_reference.py tests/test_sde.py tests/test_kernel_numerics.py tests/test_random.py tests/test_reduce.py tests/test_stream_none.py tests/hostile/test_hostile_waits.py tests/test_gpu_kernels.py > $OUT/gputests.log 2>&1; tail -3 $OUT/gputests.log
el card; timeout 100 python3 benchmarks/oscillators.py --backend cuda --n 1000000 --blocks > $OUT/card_blocks.log 2>&1; grep -i "limit\|speed-up\|PASS\|FAIL" $OUT/card_blocks.log | tail -8
el mc; timeout 80 python3 benchmarks/bench_mc.py --backend cuda --reps 5 --json $OUT/bench_mc.json > $OUT/bench_mc.log 2>&1; tail -12 $OUT/bench_mc.log
el done
