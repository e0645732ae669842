# ===== s12a.sh
#!/usr/bin/env bash
# session 12, device run A: issue 28 waits on cuda, then the opencl card's parts on NVIDIA
cd "$(dirname "$0")/.."
L=$OUT/s12a.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say setup; bash benchmarks/device_run.sh setup >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
say waits; timeout 300 bash benchmarks/device_run.sh waits >> $L 2>&1; echo "waits rc=$?" >> $L
say cuda_interrupt pre-alloc; timeout 60 python3 benchmarks/diag/cuda_interrupt.py --pre-alloc >> $L 2>&1; echo "rc=$?" >> $L
say cuda_interrupt; timeout 60 python3 benchmarks/diag/cuda_interrupt.py >> $L 2>&1; echo "rc=$?" >> $L
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
say opencl parts; EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA timeout 200 \
  python3 benchmarks/diag/opencl_card_parts.py --kinds cuda,opencl --n 1000000 >> $L 2>&1; echo "rc=$?" >> $L
say end

# ===== s12b.sh
#!/usr/bin/env bash
# session 12, device run B: the cuda graph case's exit hang, plain-CUDA exits, the opencl parts
cd "$(dirname "$0")/.."
L=$OUT/s12b.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
say tools; { which gdb eu-stack py-spy pstack; python3 -c "import cupy; print('cupy', cupy.__version__)"; } >> $L 2>&1
say waits cuda; timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/hostile/test_hostile_waits.py -k "cuda and not graph" >> $L 2>&1; echo "rc=$?" >> $L
say cuda_interrupt graph
python3 benchmarks/diag/cuda_interrupt.py --graph >> $L 2>&1 &
pid=$!
sleep 25
if kill -0 $pid 2>/dev/null; then
  echo "still running after 25 s: threads" >> $L
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan) syscall=$(cut -d' ' -f1 $t/syscall)" >> $L; done
  command -v gdb >/dev/null && timeout 60 gdb -p $pid -batch -ex "thread apply all bt 25" >> $L 2>&1
  kill -9 $pid
fi
wait $pid; echo "rc=$?" >> $L
for a in "" "--host-node" "--graph" "--graph --host-node"; do
  say cuda_exit_forever $a; timeout 20 python3 benchmarks/diag/cuda_exit_forever.py $a >> $L 2>&1; echo "rc=$?" >> $L
done
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/dump
say opencl parts; EAGLE_OPENCL_DUMP_DIR=/tmp/dump EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA timeout 200 \
  python3 benchmarks/diag/opencl_card_parts.py --kinds cuda,opencl --n 1000000 2>&1 | grep -v "drain workers" >> $L; echo "rc=$?" >> $L
for f in /tmp/dump/*.bin; do
  echo "$f $(head -1 ${f%.bin}.options) bytes=$(stat -c %s $f) ld.local=$(grep -c 'ld.local' $f) st.local=$(grep -c 'st.local' $f) call=$(grep -c 'call' $f) fma=$(grep -c 'fma.rn.f64' $f) mul=$(grep -c 'mul.rn.f64\|mul.f64' $f)" >> $L
done
tar czf $OUT/opencl_dump.tgz -C /tmp dump
say end

# ===== s12c.sh
#!/usr/bin/env bash
# session 12, device run C: native stacks of the cuda graph case (wait and exit), opencl parts
cd "$(dirname "$0")/.."
L=$OUT/s12c.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
stacks() { echo "-- native stacks of $1 ($2)" >> $L; LD_LIBRARY_PATH=$PWD/.ocl/dbg timeout 30 $PWD/.ocl/dbg/eu-stack -p $1 >> $L 2>&1; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
say cuda_interrupt graph
python3 benchmarks/diag/cuda_interrupt.py --graph >> $L 2>&1 &
pid=$!
sleep 4; kill -0 $pid 2>/dev/null && stacks $pid "4 s in"
sleep 8; kill -0 $pid 2>/dev/null && stacks $pid "12 s in"
kill -9 $pid 2>/dev/null; wait $pid; echo "rc=$?" >> $L
say cuda_interrupt stream, stacks at exit
EAGLE_EXIT_WAIT_S=1 python3 benchmarks/diag/cuda_interrupt.py >> $L 2>&1 &
pid=$!
sleep 8; kill -0 $pid 2>/dev/null && stacks $pid "8 s in"
kill -9 $pid 2>/dev/null; wait $pid; echo "rc=$?" >> $L
say cupy exit, stacks
python3 benchmarks/diag/cuda_exit_forever.py >> $L 2>&1 &
pid=$!
sleep 5; kill -0 $pid 2>/dev/null && stacks $pid "5 s in"
kill -9 $pid 2>/dev/null; wait $pid; echo "rc=$?" >> $L
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
say opencl parts; EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA timeout 240 \
  python3 benchmarks/diag/opencl_card_parts.py --kinds opencl --n 1000000 2>&1 | grep -v "drain workers" >> $L; echo "rc=$?" >> $L
say end

# ===== s12d.sh
#!/usr/bin/env bash
# session 12, device run D: the cuda graph case's hang at exit (native stacks), NVIDIA's SVM
cd "$(dirname "$0")/.."
L=$OUT/s12d.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
stacks() { echo "-- native stacks of $1 ($2)" >> $L; LD_LIBRARY_PATH=$PWD/.ocl/dbg timeout 30 $PWD/.ocl/dbg/eu-stack -p $1 2>&1 | grep -v "^#[0-9]*  *0x[0-9a-f]*$" | awk '/^TID/{t=$0; n=0; next} {n++; if (n<=14) print t": "$0}' | grep -v blas_thread >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
say cuda_interrupt graph, exit wait 1 s
EAGLE_EXIT_WAIT_S=1 python3 benchmarks/diag/cuda_interrupt.py --graph >> $L 2>&1 &
pid=$!
sleep 7; kill -0 $pid 2>/dev/null && stacks $pid "7 s in"
sleep 5; kill -0 $pid 2>/dev/null && stacks $pid "12 s in"
kill -9 $pid 2>/dev/null; wait $pid; echo "rc=$?" >> $L
say pytest waits graph; timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/hostile/test_hostile_waits.py -k "cuda and graph" >> $L 2>&1; echo "rc=$?" >> $L
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
say svm probe; timeout 120 python3 benchmarks/diag/opencl_svm_probe.py --platform NVIDIA --reps 10 >> $L 2>&1; echo "rc=$?" >> $L
say svm probe n=1e6; timeout 120 python3 benchmarks/diag/opencl_svm_probe.py --platform NVIDIA --n 1000000 --reps 10 >> $L 2>&1; echo "rc=$?" >> $L
say end

# ===== s12e.sh
#!/usr/bin/env bash
# session 12, device run E: the cuda backend that keeps the context of running replays at exit
cd "$(dirname "$0")/.."
L=$OUT/s12e.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
say cuda_interrupt graph; EAGLE_EXIT_WAIT_S=1 timeout 40 python3 benchmarks/diag/cuda_interrupt.py --graph >> $L 2>&1; echo "rc=$?" >> $L
say waits; timeout 300 bash benchmarks/device_run.sh waits >> $L 2>&1; echo "rc=$?" >> $L
say check; timeout 200 python3 -m eagle.check cuda 2>&1 | tail -4 >> $L; echo "rc=$?" >> $L
say gputests; timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_cuda.py 2>&1 | tail -5 >> $L; echo "rc=$?" >> $L
say end

# ===== s12f.sh
#!/usr/bin/env bash
# session 12, device run F: the opencl card's parts with polled waits and with blocking waits
cd "$(dirname "$0")/.."
L=$OUT/s12f.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
export EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA
for w in 1 0; do
  say "opencl parts, EAGLE_WAIT_BLOCKING=$w"; EAGLE_WAIT_BLOCKING=$w timeout 120 python3 benchmarks/diag/opencl_card_parts.py --kinds opencl --n 1000000 2>&1 | grep -v "drain workers\|options\|ptxas\|Warning\|build log" >> $L; echo "rc=$?" >> $L
done
say "card cuda vs opencl, blocking waits"; EAGLE_WAIT_BLOCKING=1 timeout 120 python3 benchmarks/bench_opencl_card.py --kinds cuda,opencl --n 1000000 >> $L 2>&1
say end

# ===== s12g.sh
#!/usr/bin/env bash
# session 12, device run G: the opencl card with polled and with blocking waits, interleaved
cd "$(dirname "$0")/.."
L=$OUT/s12g.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
export EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA
for round in 1 2; do for w in 0 1; do for kinds in cuda,opencl opencl; do
  say "round $round EAGLE_WAIT_BLOCKING=$w kinds $kinds"
  EAGLE_WAIT_BLOCKING=$w timeout 60 python3 benchmarks/bench_opencl_card.py --kinds $kinds --n 1000000 --reps 7 2>&1 | python3 -c "import json,sys; d=json.load(sys.stdin); print({k: (round(v['median_ms'], 3), round(v['min_ms'], 3), v['bits_equal_to_first']) for k, v in d['kinds'].items()})" >> $L 2>&1
done; done; done
say end

# ===== s12h.sh
#!/usr/bin/env bash
# session 12, device run H: opencl host functions waited for by the host thread (not a callback)
cd "$(dirname "$0")/.."
L=$OUT/s12h.log
t0=$(date +%s); say() { echo "==== [$(( $(date +%s) - t0 ))s] $*" >> $L; }
say prebuilt; bash benchmarks/device_run.sh prebuilt >> $L 2>&1 || { say setup failed; exit 1; }
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /etc/OpenCL/vendors
nvlib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
echo "${nvlib:-libnvidia-opencl.so.1}" > /etc/OpenCL/vendors/nvidia.icd
ldconfig -p | grep -q 'libOpenCL\.so\.1' || export LD_LIBRARY_PATH=$PWD/.ocl/lib:${LD_LIBRARY_PATH:-}
export EAGLE_BACKEND_OPENCL=$PWD/.oclbuild/libeagle_opencl.so EAGLE_OPENCL_PLATFORM=NVIDIA
for round in 1 2 3; do
  say "round $round"
  timeout 60 python3 benchmarks/bench_opencl_card.py --kinds cuda,opencl --n 1000000 --reps 7 2>&1 | python3 -c "import json,sys; d=json.load(sys.stdin); print({k: (round(v['median_ms'], 3), round(v['min_ms'], 3), v['bits_equal_to_first']) for k, v in d['kinds'].items()})" >> $L 2>&1
done
say parts; timeout 100 python3 benchmarks/diag/opencl_card_parts.py --kinds opencl --n 1000000 2>&1 | grep -v "drain workers\|options\|ptxas\|Warning\|build log\|comma" >> $L
say check; timeout 150 python3 -m eagle.check --timeout 60 $EAGLE_BACKEND_OPENCL 2>&1 | grep -v " ok$" >> $L
say end

