#!/usr/bin/env bash
# Session 39, one GPU: the host microbenchmarks, the ground truth of the seven workloads registered in
# session 38 (another lease of them), then where the step time goes in the three of them that are
# calibration workloads (hf_qwen2_0p5b_bf16, vit_large_bf16_ckpt, unet_fp32_128px): per-phase host time
# (host_phase_probe.py, with gpt2_350m_ckpt, the other checkpointed calibration workload of the same
# width and depth as the ViT-L, beside them) and one profiled iteration with its Chrome trace
# (op_time_probe.py --chrome).
# Everything comes back as one tarball. From the repository root:
#   bash benchmarks/gpu/session39/call2.sh $OUT TAG
set -u
OUTDIR=${1:?OUT}
TAG=${2:?TAG}
DIR=/tmp/$TAG
CALIBRATION="hf_qwen2_0p5b_bf16 vit_large_bf16_ckpt unet_fp32_128px"
. benchmarks/gpu/device_call_start.sh
{ lscpu | grep -E '^(Model name|CPU\(s\)|CPU max MHz)'; nproc; } > "$DIR/machine.txt" 2>&1
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
names=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks/validation'); import suite; print(' '.join(w.name for w in suite.WORKLOADS[30:]))")
timeout 200 python3 benchmarks/validation/measure_ground_truth.py --out "$DIR/ground_truth.json" --only $names \
  > "$DIR/ground_truth.log" 2>&1; echo "ground truth rc=$?"
timeout 180 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/host_phase" $CALIBRATION gpt2_350m_ckpt > "$DIR/host_phase.log" 2>&1
echo "host_phase rc=$?"
timeout 100 python3 benchmarks/gpu/op_time_probe.py --out "$DIR/op_times" --chrome $CALIBRATION > "$DIR/op_times.log" 2>&1
echo "op_times rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt" "$DIR/machine.txt"; tail -9 "$DIR/ground_truth.log"; tail -3 "$DIR/host_phase.log" "$DIR/op_times.log"
tar czf "$OUTDIR/$TAG.tgz" -C /tmp "$TAG"
