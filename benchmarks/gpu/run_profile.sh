#!/usr/bin/env bash
# Builds the H200 kernel-profile dataset on a machine with a real NVIDIA GPU.
# Usage (from the repository root): bash benchmarks/gpu/run_profile.sh OUT_DIR
# Writes OUT_DIR/profiles.tgz (the Parquet files, host_overhead.json, env.json and the log).
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
tar czf "$out/profiles.tgz" -C "$work" .
ls -la "$work"
