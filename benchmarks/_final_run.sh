#!/usr/bin/env bash
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
B="python3 -W ignore benchmarks/bench_ode.py --backend cuda"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >> $OUT/ode_eh.log
timeout 100 $B --sizes 2^20,2^23 --reps 7 --impls eagle,hand --json $OUT/ode_eh.json >> $OUT/ode_eh.log 2>&1
for k in 8 32; do EAGLE_ODE_BENCH_KW="{\"steps_per_call\": $k}" timeout 30 $B --sizes 2^23 --reps 5 --impls eagle --methods tsit5,rk45 --dtypes float64 2>&1 | grep " ms" | sed "s/^/spc=$k /"; done >> $OUT/ode_eh.log
grep " ms" $OUT/ode_eh.log
timeout 120 python3 -m pytest -q -p no:cacheprovider -rs -m "gpu" tests/test_ode_reference.py tests/test_sde.py tests/test_kernel_numerics.py tests/test_random.py > $OUT/gputests.log 2>&1; tail -3 $OUT/gputests.log; grep "^FAILED" $OUT/gputests.log
