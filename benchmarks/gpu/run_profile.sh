#!/usr/bin/env bash
# Builds the H200 kernel-profile dataset on a machine with a real NVIDIA GPU.
# Usage (from the repository root): bash benchmarks/gpu/run_profile.sh OUT_DIR
# Writes OUT_DIR/profiles.tgz (the Parquet files, host_overhead.json, env.json and the logs): the fixed
# grids with seed 0's random draws, then seeds 2-5's draws appended (about 10 minutes on an H200).
# Unpack into maya/estimator/data/h200/ and run
#   maya fit --profiles maya/estimator/data/h200 --out maya/estimator/data/h200/models --no-exact-table
#   python benchmarks/calibrate.py --write
set -euo pipefail
out=${1:?usage: run_profile.sh OUT_DIR}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work=$(mktemp -d)
python3 - > "$work/env.json" <<'PY'
import json, socket, subprocess, datetime, torch
drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
p = torch.cuda.get_device_properties(0)
free, total = torch.cuda.mem_get_info()
print(json.dumps({"gpu": torch.cuda.get_device_name(), "total_memory": p.total_memory, "mem_get_info_free": free,
  "mem_get_info_total": total, "sm_count": p.multi_processor_count, "driver": drv, "torch": torch.__version__,
  "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "host": socket.gethostname(),
  "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}, indent=2))
PY
cat "$work/env.json"
python3 -m maya.estimator.profiler --out "$work" 2>&1 | tee "$work/profile.log" | grep -v "^DEBUG" | tail -n 40
# More random off-grid draws (seeds 2-5; seed 1 is benchmarks/gpu/heldout_ops_h200, never trained on),
# appended to each family's file: the models learn between and beyond the grid points from them.
families=gemm,conv,sdpa,norm,softmax,embedding,elementwise,reduction,copy,foreach,index,rnn,pool
for seed in 2 3 4 5; do
  python3 -m maya.estimator.profiler --out "$work/draws_seed$seed" --random-only --seed "$seed" --families "$families" \
    2>&1 | grep -v "^DEBUG" > "$work/draws_seed$seed.log"
  tail -n 1 "$work/draws_seed$seed.log"
done
python3 - "$work" <<'PY'
import pathlib, sys
import pyarrow as pa, pyarrow.parquet as pq
work = pathlib.Path(sys.argv[1])
for base in sorted(work.glob("*.parquet")):
    extra = [pq.read_table(p) for p in sorted(work.glob(f"draws_seed*/{base.name}"))]
    pq.write_table(pa.concat_tables([pq.read_table(base), *extra]), base)
    print(base.name, pq.read_metadata(base).num_rows, "rows")
PY
rm -rf "$work"/draws_seed*/
tar czf "$out/profiles.tgz" -C "$work" .
ls -la "$work"
