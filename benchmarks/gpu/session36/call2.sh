#!/usr/bin/env bash
# Session 36, the same machine as call1.sh: the validation suite's ground truth in two parts (the
# device runs a command for at most 600 s): PART 1 is the first 20 suite entries, PART 2 the rest.
# measure_ground_truth.py writes its JSON after every workload and its environment at the end.
#   bash benchmarks/gpu/session36/call2.sh $OUT 1     (then 2)
set -u
OUTDIR=${1:?OUT}
PART=${2:?PART}
DIR=/tmp/s36gt$PART
. benchmarks/gpu/device_call_start.sh
if [ "$PART" = 1 ]; then SLICE="[:20]"; LIMIT=560; else SLICE="[20:]"; LIMIT=400; fi
python3 -c "import sys; sys.path.insert(0, 'benchmarks/validation'); import suite; print(' '.join(w.name for w in suite.WORKLOADS$SLICE))" > "$DIR/names.txt"
timeout $LIMIT python3 benchmarks/validation/measure_ground_truth.py --out "$DIR/ground_truth.json" --only $(cat "$DIR/names.txt") \
  > "$DIR/ground_truth.log" 2>&1; echo "ground truth rc=$?"
date -u +%FT%TZ >> "$DIR/env.txt"
cat "$DIR/env.txt"; tail -3 "$DIR/ground_truth.log"
tar czf "$OUTDIR/s36gt$PART.tgz" -C /tmp "s36gt$PART"
