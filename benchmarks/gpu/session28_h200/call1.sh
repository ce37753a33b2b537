#!/usr/bin/env bash
# Session 28 device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session28_h200/call1.sh OUT [END]
# Another lease of the whole single-GPU suite's ground truth (measure_ground_truth.py, as leases d-h
# ran it: benchmarks/gpu/host_phase_h200/COMMANDS.md) with the lease's machine.txt and host costs
# (`maya profile --families host`), to join benchmarks/gpu/host_phase_h200 as a lease; then
# convolution draws behind the GPU sleep (seed 152, which timed out in session 27, and 198 onwards)
# until END s (default 570). In /tmp/s28a, tarred to OUT/s28a.tgz.
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-570}; DIR=/tmp/s28a
source benchmarks/gpu/device_call_start.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep 'Model name'
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; date -u; } > $DIR/machine.txt
timeout 470 python3 benchmarks/validation/measure_ground_truth.py --out $DIR/ground_truth.json > $DIR/ground_truth.log 2>&1
echo "ground truth rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 60 python3 -m maya.estimator.profiler --families host --out $DIR/host > $DIR/host.log 2>&1
echo "host profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in 152 $(seq 198 215); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s28a.tgz" -C /tmp s28a
