#!/usr/bin/env bash
# Session 37, one GPU: the host microbenchmarks, then launch_gap_probe.py (three steady iterations,
# CUDA activity alone) of every calibration workload of the suite. Everything goes to /tmp/s37a and
# comes back as one tarball. From the repository root:
#   bash benchmarks/gpu/session37/call1.sh $OUT
set -u
OUTDIR=${1:?OUT}
DIR=/tmp/s37a
. benchmarks/gpu/device_call_start.sh
{ nproc; lscpu | grep 'Model name'; } > "$DIR/machine.txt"
timeout 60 python3 -m maya.estimator.profiler --out "$DIR/host" --families host > "$DIR/host.log" 2>&1; echo "host rc=$?"
python3 -c "import sys; sys.path.insert(0, 'benchmarks/validation'); import suite; print(' '.join(w.name for w in suite.WORKLOADS if not w.held_out))" > "$DIR/names.txt"
timeout 470 python3 benchmarks/gpu/launch_gap_probe.py --out "$DIR/launch_gaps" $(cat "$DIR/names.txt") \
  > "$DIR/launch_gaps.log" 2>&1; echo "launch gaps rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -4 "$DIR/launch_gaps.log"; du -sh "$DIR"
tar czf "$OUTDIR/s37a.tgz" -C /tmp s37a
