#!/usr/bin/env bash
# Device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session29_h200/call1.sh OUT [END]
# Written in session 28 after its device time was spent; not yet run. First the lease's host costs with
# `maya profile --families host`, which since session 28 also measures module_forward_grad_op_us (the
# tiny module stack's forward with grad enabled: the shipped module_forward_op_us is measured under
# no_grad and scaled by the forward in-situ factor, 1.59, whose rule gave 1.857 with lease_l); then the
# phase probe of the host-bound calibration workloads on the same lease (host_phase_h200/lease_*,
# benchmarks/host_phase_factors.py), and their ground truth; then GradScaler's two ops, added to the
# foreach grid in session 29 (`--ops`); then convolution draws behind the GPU sleep (seeds 205 and 210
# onwards) until END s (default 560). In /tmp/s29a, tarred to OUT/s29a.tgz.
# The working tree must be under the device tool's 64 MiB: move benchmarks/gpu/host_profile_h200x4,
# conv_kernels_h200 and random_draws_h200 out of the checkout for the call (session 28 did).
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-560}; DIR=/tmp/s29a
source benchmarks/gpu/device_call_start.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep 'Model name'
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; date -u; } > $DIR/machine.txt
timeout 60 python3 -m maya.estimator.profiler --families host --out $DIR/host > $DIR/host.log 2>&1
echo "host profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
workloads="dlrm_fp32 mlp_tiny_adamw moe_top2_bf16 mobilenet_v2_bf16_channels_last resnet50_bf16_channels_last_160 hf_llama_bf16"
timeout 150 python3 benchmarks/gpu/host_phase_probe.py --out $DIR/phases $workloads > $DIR/phases.log 2>&1
echo "phase probe rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 200 python3 benchmarks/validation/measure_ground_truth.py --only $workloads --out $DIR/ground_truth.json > $DIR/ground_truth.log 2>&1
echo "ground truth rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 90 python3 -m maya.estimator.profiler --families foreach --out $DIR/scaler \
  --ops aten::_amp_foreach_non_finite_check_and_unscale_,aten::_amp_update_scale_ > $DIR/scaler.log 2>&1
echo "GradScaler profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in 205 $(seq 210 230); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s29a.tgz" -C /tmp s29a
