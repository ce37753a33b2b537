#!/usr/bin/env bash
# Device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session25_h200/call1.sh OUT [END]
# Written in session 25 after its device time was spent; for the next session that has some. First this
# lease's yardsticks: the ground truth of the host-bound calibration rows whose lease spread is widest
# (HF Llama, the tiny MLP, the MoE; measure_ground_truth.py) and ResNet-50 channels-last 160 px and
# MobileNetV2 (as leases i and j measured them), and the lease's host costs (`maya profile --families
# host`), to join benchmarks/gpu/host_phase_h200 as another lease: does a lease's own host profile
# explain its host-bound steps (benchmarks/results/lease_host_check_h200.md)? Session 25's phase probe
# ran HF Llama host-bound in forward and backward (benchmarks/results/phase_spans_llama_h200.md),
# at 68.9 ms against 49.6 ms, the median of seven leases' ground truth. Then (added in session 26) the
# grouped GEMMs of MoE layers against the batched GEMMs Maya estimates them as
# (benchmarks/gpu/grouped_mm_probe.py). Then convolution draws behind the GPU
# sleep, the seeds sessions 23-25 left (139, 140, 149-152, 159-164, 174-176, 195 onwards), until END s
# (default 520). In /tmp/s26a, tarred to OUT/s26a.tgz. Later calls: `bash
# benchmarks/gpu/session20_h200/call1.sh OUT NAME FIRST LAST END` (conv draws only, seeds 213 onwards).
# Run in session 27: benchmarks/gpu/session27_h200/COMMANDS.md.
set -u
out=${1:?usage: call1.sh OUT [END]}; end=${2:-520}; DIR=/tmp/s26a
source benchmarks/gpu/device_call_start.sh
timeout 300 python3 benchmarks/validation/measure_ground_truth.py --only hf_llama_bf16 mlp_tiny_adamw moe_top2_bf16 mobilenet_v2_bf16_channels_last resnet50_bf16_channels_last_160 --out $DIR/ground_truth.json > $DIR/ground_truth.log 2>&1
echo "ground truth hf_llama mlp_tiny moe mobilenet resnet50_cl_160 rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 -m maya.estimator.profiler --families host --out $DIR/host > $DIR/host.log 2>&1
echo "host profile rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 90 python3 benchmarks/gpu/grouped_mm_probe.py --out $DIR/grouped_mm.json > $DIR/grouped_mm.log 2>&1
echo "grouped_mm probe rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in 139 140 $(seq 149 152) $(seq 159 164) 174 175 176 $(seq 195 212); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s26a.tgz" -C /tmp s26a
