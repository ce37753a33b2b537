# Sourced by a device call's script (benchmarks/gpu/session*/call*.sh) with DIR set: sets the
# multicast-off NCCL variables and the Python path, creates DIR, and writes DIR/env.txt (start time,
# GPU and driver, torch, CUDA and cuDNN versions); the script appends the end time when done.
# The device tool brings back at most 8 files from $OUT, at most 2 folders down: a call that writes more
# writes DIR elsewhere (/tmp) and tars it into $OUT (benchmarks/gpu/session35/call2.sh).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$DIR"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > "$DIR/env.txt"
