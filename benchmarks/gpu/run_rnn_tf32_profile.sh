#!/usr/bin/env bash
# Re-times the cuDNN RNN family (maya/estimator/rnn_grid.py) with TF32 allowed for float32, as PyTorch's
# default (torch.backends.cudnn.allow_tf32 = True) runs it, on a machine with an NVIDIA GPU, from the
# repository root:   bash benchmarks/gpu/run_rnn_tf32_profile.sh OUT_DIR
# The fixed grid with seed 0's random draws, then seeds 2-5's draws, as run_profile.sh times every
# family. OUT_DIR/rnn.parquet is these rows plus the committed file's float32 rows timed with TF32 off
# (kept: a script that turns TF32 off records allow_tf32=False, and the model sees the difference in
# its peak-rate feature). Copy it to maya/estimator/data/h200/rnn.parquet, then refit and recalibrate:
#   maya fit --profiles maya/estimator/data/h200 --out maya/estimator/data/h200/models --no-exact-table
#   python benchmarks/calibrate.py --write
set -euo pipefail
out=${1:?usage: run_rnn_tf32_profile.sh OUT_DIR}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work=$(mktemp -d)
python3 -m maya.estimator.profiler --out "$work" --families rnn 2>&1 | grep -v "^DEBUG" > "$work/profile.log"
tail -n 2 "$work/profile.log"
for seed in 2 3 4 5; do
  python3 -m maya.estimator.profiler --out "$work/draws_seed$seed" --random-only --seed "$seed" --families rnn \
    2>&1 | grep -v "^DEBUG" > "$work/draws_seed$seed.log"
  tail -n 1 "$work/draws_seed$seed.log"
done
mkdir -p "$out"
python3 - "$work" "$out" <<'PY'
import pathlib, sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
work, out = map(pathlib.Path, sys.argv[1:])
new = pa.concat_tables([pq.read_table(work / "rnn.parquet"), *(pq.read_table(p) for p in sorted(work.glob("draws_seed*/rnn.parquet")))])
old = pq.read_table("maya/estimator/data/h200/rnn.parquet")
fp32 = pc.equal(pc.list_element(old.column("input_dtypes"), 0), "float32")
kept = old.filter(pc.and_(fp32, pc.invert(old.column("allow_tf32"))))
merged = pa.concat_tables([new, kept.cast(new.schema)])
pq.write_table(merged, out / "rnn.parquet")
print(f"rnn.parquet: {new.num_rows} new rows (float32 with TF32 allowed) + {kept.num_rows} committed float32 rows with TF32 off")
PY
cp "$work/profile.log" "$out/rnn_profile.log"
