#!/usr/bin/env bash
# Session 36, one GPU: the host microbenchmarks (current backward method) before and after, the
# backward probe, and the per-phase host time of the seven host-bound calibration workloads.
# Everything goes to /tmp/s36a and comes back as one tarball. From the repository root:
#   bash benchmarks/gpu/session36/call1.sh $OUT
set -u
OUTDIR=${1:?OUT}
DIR=/tmp/s36a
. benchmarks/gpu/device_call_start.sh
{ nproc; lscpu | grep 'Model name'; } > "$DIR/machine.txt"
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
timeout 60 python3 benchmarks/gpu/backward_host_probe.py --out "$DIR" --repeats 3 > "$DIR/backward_host.log" 2>&1; echo "backward rc=$?"
timeout 260 python3 benchmarks/gpu/host_phase_probe.py --out "$DIR/host_phase" mlp_tiny_adamw dlrm_fp32 moe_top2_bf16 \
  mobilenet_v2_bf16_channels_last resnet50_bf16_channels_last_160 hf_llama_bf16 gpt2_124m_ddp1 \
  > "$DIR/host_phase.log" 2>&1; echo "host_phase rc=$?"
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host_after" --families host > "$DIR/host_after.log" 2>&1; echo "host after rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -3 "$DIR/host_phase.log"
tar czf "$OUTDIR/s36a.tgz" -C /tmp s36a
