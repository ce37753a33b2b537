#!/usr/bin/env bash
# Third-party training scripts run unchanged under `maya emulate` (docs/emulation.md, "Beyond the
# tests"): the commands behind the figures given there, from the repository root:
#
#   bash benchmarks/third_party/run.sh nanogpt          # karpathy/nanoGPT 3adf61e, 1 and 8 GPUs
#   bash benchmarks/third_party/run.sh torchtitan       # torchtitan 0.2.2 (PyPI): debug model on 1 and 8 GPUs (TP, PP), Llama 3 8B on 16 x 8 (TP x FSDP, TP x PP x FSDP)
#   bash benchmarks/third_party/run.sh torchtitan-main  # torchtitan main b5bcd76: its first step (it needs a torch newer than 2.13 after it)
#   bash benchmarks/third_party/run.sh megatron-core    # Megatron-LM d98e8a6: examples/run_simple_mcore_train_loop.py on 2 GPUs (TP 2)
#   bash benchmarks/third_party/run.sh megatron-lm      # Megatron-LM d98e8a6: pretrain_gpt.py, mock data, TP 2 x PP 2 (Python 3.12: $PYTHON312)
#
# Each needs the network (git clone, pip) and makes its own virtual environment under $WORK (default
# /tmp/maya-third-party) with torch 2.13.0 (CPU), this checkout of Maya and the project's own
# requirements, so the project's .venv is left alone. The data files these scripts read are stand-ins
# made by stand_in_data.py (seeded): the predictions depend on their shapes, not their contents.
set -euo pipefail
MAYA=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/maya-third-party}
mkdir -p "$WORK"

venv() {  # venv NAME PIP-ARGS...: a virtual environment with torch 2.13.0, Maya and PIP-ARGS
  local dir="$WORK/venv-$1"; shift
  if [ ! -e "$dir/.complete" ]; then  # made again if an earlier run stopped half-way
    rm -rf "$dir"
    {
      "${VENV_PYTHON:-python3}" -m venv "$dir"
      "$dir/bin/pip" install -q torch==2.13.0
      "$dir/bin/pip" install -q -e "$MAYA"
      [ $# -eq 0 ] || "$dir/bin/pip" install -q "$@"
    } >&2  # the caller reads the directory from stdout
    touch "$dir/.complete"
  fi
  echo "$dir"
}

checkout() {  # checkout URL COMMIT DIR
  [ -d "$3/.git" ] || git clone -q "$1" "$3"
  git -C "$3" checkout -q "$2"
}

case "${1:-}" in
  nanogpt)
    env=$(venv nanogpt numpy)
    checkout https://github.com/karpathy/nanoGPT 3adf61e "$WORK/nanoGPT"
    "$env/bin/python" "$MAYA/benchmarks/third_party/stand_in_data.py" nanogpt "$WORK/nanoGPT/data/openwebtext"
    cd "$WORK/nanoGPT"
    time "$env/bin/maya" emulate train.py --max_iters=6 --eval_interval=1000 --eval_iters=2 --log_interval=1 \
      --batch_size=12 --gradient_accumulation_steps=5 --wandb_log=False
    time "$env/bin/maya" emulate --nproc-per-node 8 train.py --max_iters=3 --eval_interval=1000 --eval_iters=1 \
      --log_interval=1 ;;
  torchtitan)
    env=$(venv torchtitan torchtitan==0.2.2 torchdata tomli triton datasets tokenizers tyro tensorboard einops pillow fsspec)
    # The wheel has no test assets: the tokenizer comes from the repository (main's copy), the text is a stand-in.
    checkout https://github.com/pytorch/torchtitan b5bcd76 "$WORK/torchtitan-src"
    mkdir -p "$WORK/torchtitan-0.2.2/tests/assets"
    cp -r "$WORK/torchtitan-src/tests/assets/tokenizer" "$WORK/torchtitan-0.2.2/tests/assets/"
    "$env/bin/python" "$MAYA/benchmarks/third_party/stand_in_data.py" c4_test "$WORK/torchtitan-0.2.2/tests/assets/c4_test"
    cd "$WORK/torchtitan-0.2.2"  # not the source checkout: -m torchtitan.train must find the installed 0.2.2
    debug=(--model.name llama3 --model.flavor debugmodel --model.hf-assets-path tests/assets/tokenizer
           --training.dataset c4_test --training.steps 4 --training.local-batch-size 8 --training.seq-len 2048)
    time "$env/bin/maya" emulate --nproc-per-node 1 -m torchtitan.train "${debug[@]}"
    time "$env/bin/maya" emulate --nproc-per-node 8 -m torchtitan.train "${debug[@]}" --parallelism.tensor-parallel-degree 2
    time "$env/bin/maya" emulate --nproc-per-node 8 -m torchtitan.train "${debug[@]}" --parallelism.pipeline-parallel-degree 2
    time "$env/bin/maya" emulate --nnodes 16 --nproc-per-node 8 -m torchtitan.train --model.name llama3 \
      --model.flavor 8B --model.hf-assets-path tests/assets/tokenizer --training.dataset c4_test --training.steps 4 \
      --training.local-batch-size 2 --training.seq-len 8192 --parallelism.tensor-parallel-degree 4 \
      --activation-checkpoint.mode full
    time "$env/bin/maya" emulate --nnodes 16 --nproc-per-node 8 -m torchtitan.train --model.name llama3 \
      --model.flavor 8B --model.hf-assets-path tests/assets/tokenizer --training.dataset c4_test --training.steps 4 \
      --training.local-batch-size 4 --training.seq-len 8192 --parallelism.tensor-parallel-degree 4 \
      --parallelism.pipeline-parallel-degree 4 --activation-checkpoint.mode full ;;
  torchtitan-main)
    checkout https://github.com/pytorch/torchtitan b5bcd76 "$WORK/torchtitan-src"
    env=$(venv torchtitan-main triton -e "$WORK/torchtitan-src")
    "$env/bin/python" "$MAYA/benchmarks/third_party/stand_in_data.py" c4_test "$WORK/torchtitan-src/tests/assets/c4_test"
    cd "$WORK/torchtitan-src"
    # Fails after its first step (torch.distributed.set_timeout is torch 2.14's); the page gives that step.
    "$env/bin/maya" emulate --nproc-per-node 1 -m torchtitan.train --module llama3 --config llama3_debugmodel \
      --training.steps 4 || true ;;
  megatron-core)
    checkout https://github.com/NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553 "$WORK/Megatron-LM"
    env=$(venv megatron numpy packaging pybind11 triton)  # Megatron-Core imports triton (MoE ops) at start
    cd "$WORK/Megatron-LM"
    # Its mock dataset needs C++ helpers, which its Makefile names with python3-config's suffix (a venv has
    # none, and the system's may be another Python's): built here for the venv's Python.
    (cd megatron/core/datasets && g++ -O3 -Wall -shared -std=c++17 -fPIC $("$env/bin/python" -m pybind11 --includes) \
      helpers.cpp -o "helpers_cpp$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')")
    # Fails after its 5 iterations, at the checkpoint save (docs/emulation.md says why); the page gives them.
    PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate --nproc-per-node 2 \
      examples/run_simple_mcore_train_loop.py || true ;;
  megatron-lm)
    checkout https://github.com/NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553 "$WORK/Megatron-LM"
    # megatron.training needs Python 3.12 (typing.override) at this commit.
    env=$(VENV_PYTHON="${PYTHON312:-python3.12}" venv megatron312 numpy packaging pybind11 triton)
    cd "$WORK/Megatron-LM"
    (cd megatron/core/datasets && g++ -O3 -Wall -shared -std=c++17 -fPIC $("$env/bin/python" -m pybind11 --includes) \
      helpers.cpp -o "helpers_cpp$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')")
    # A small GPT without Apex or Transformer Engine (--transformer-impl local and the fusions they provide off);
    # CUDA_DEVICE_MAX_CONNECTIONS=1 as Megatron requires for tensor parallelism on a GPU.
    time CUDA_DEVICE_MAX_CONNECTIONS=1 PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate \
      --nproc-per-node 4 pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
      --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 \
      --micro-batch-size 2 --global-batch-size 16 --train-iters 3 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer \
      --vocab-size 32000 --transformer-impl local --bf16 --log-interval 1 --eval-iters 0 --eval-interval 1000 \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-gelu-fusion \
      --no-bias-dropout-fusion --no-rope-fusion
    # The same on 2 x 8 GPUs (data parallelism 4), global batch 32, checking the rank classes.
    time CUDA_DEVICE_MAX_CONNECTIONS=1 PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate \
      --nnodes 2 --nproc-per-node 8 --verify-dedup pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
      --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 \
      --micro-batch-size 2 --global-batch-size 32 --train-iters 3 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer \
      --vocab-size 32000 --transformer-impl local --bf16 --log-interval 1 --eval-iters 0 --eval-interval 1000 \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-gelu-fusion \
      --no-bias-dropout-fusion --no-rope-fusion
    # On 8 GPUs: TP 4 x DP 2 (tensor-parallel rank 0 loads the batch: 2 rank classes), then the
    # distributed optimizer with overlapped gradient reduction and parameter gathering
    # (TP 2 x PP 2 x DP 2; its data-parallel ranks alike, checked, then with --exact-dedup), then the
    # interleaved schedule (TP 2 x PP 4, one layer per virtual stage).
    time CUDA_DEVICE_MAX_CONNECTIONS=1 PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate \
      --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 \
      --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 \
      --micro-batch-size 2 --global-batch-size 16 --train-iters 3 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer \
      --vocab-size 32000 --transformer-impl local --bf16 --log-interval 1 --eval-iters 0 --eval-interval 1000 \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-gelu-fusion \
      --no-bias-dropout-fusion --no-rope-fusion
    for dedup in --verify-dedup --exact-dedup; do
    time CUDA_DEVICE_MAX_CONNECTIONS=1 PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate \
      --nproc-per-node 8 $dedup pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
      --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
      --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 \
      --micro-batch-size 2 --global-batch-size 16 --train-iters 3 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer \
      --vocab-size 32000 --transformer-impl local --bf16 --log-interval 1 --eval-iters 0 --eval-interval 1000 \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-gelu-fusion \
      --no-bias-dropout-fusion --no-rope-fusion
    done
    time CUDA_DEVICE_MAX_CONNECTIONS=1 PATH="$env/bin:$PATH" PYTHONPATH="$WORK/Megatron-LM" "$env/bin/maya" emulate \
      --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 \
      --num-layers-per-virtual-pipeline-stage 1 \
      --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 \
      --micro-batch-size 2 --global-batch-size 16 --train-iters 3 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer \
      --vocab-size 32000 --transformer-impl local --bf16 --log-interval 1 --eval-iters 0 --eval-interval 1000 \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-gelu-fusion \
      --no-bias-dropout-fusion --no-rope-fusion ;;
  *) echo "usage: bash benchmarks/third_party/run.sh nanogpt|torchtitan|torchtitan-main|megatron-core|megatron-lm" >&2; exit 2 ;;
esac
