"""The validation suite: which training scripts, with which flags, are measured on the GPU.

Every entry runs one unchanged script from workloads/ with its argv, and measure_ground_truth.py
records its step time and peak memory on a real GPU. Entries with held_out=True were chosen before
any calibration, spread over the model families (about a third of the suite); calibration and tuning
decisions must never look at them, so that their error is an honest estimate of Maya's accuracy.
"""

from dataclasses import dataclass
from pathlib import Path

WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"


@dataclass(frozen=True, kw_only=True, slots=True)
class Workload:
    """One measured run of a training script."""

    name: str
    """Unique name: the key of this run in the ground-truth file."""
    script: str
    """The script's file name under workloads/ (an absolute path is taken as it is)."""
    argv: tuple[str, ...] = ()
    """Command-line flags passed to the script."""
    held_out: bool = False
    """True if no calibration decision may look at this run's measurement."""

    @property
    def script_path(self) -> Path:
        return WORKLOADS_DIR / self.script


WORKLOADS: tuple[Workload, ...] = (
    # The data-parallel code path (DDP buckets and all-reduces; FSDP2 all-gathers, reduce-scatters and
    # parameter freeing) on a one-rank NCCL group; the FSDP2 run is held out.
    Workload(name="gpt2_124m_ddp1", script="gpt2_data_parallel.py",
             argv=("--dp", "ddp", "--model", "124m", "--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast")),
    Workload(name="gpt2_124m_fsdp1", script="gpt2_data_parallel.py",
             argv=("--dp", "fsdp", "--model", "124m", "--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast"),
             held_out=True),
    # nanoGPT-style GPT-2: 124M, 350M, 760M parameters
    Workload(name="gpt2_124m_bf16", script="gpt2.py",
             argv=("--model", "124m", "--batch-size", "16", "--seq-len", "1024", "--precision", "bf16-autocast")),
    Workload(name="gpt2_124m_fp32", script="gpt2.py",
             argv=("--model", "124m", "--batch-size", "8", "--seq-len", "512", "--precision", "fp32"), held_out=True),
    # float16 autocast with GradScaler (added 2026-12-05, session 29, held out from the start: the
    # scaler's unscale and update ops were profiled that session and no calibration looks at it).
    Workload(name="gpt2_124m_fp16_scaler", script="gpt2.py",
             argv=("--model", "124m", "--batch-size", "16", "--seq-len", "1024", "--precision", "fp16-autocast"),
             held_out=True),
    Workload(name="gpt2_124m_bf16_weights_seq2048", script="gpt2.py",
             argv=("--model", "124m", "--batch-size", "4", "--seq-len", "2048", "--precision", "bf16")),
    Workload(name="gpt2_350m_ckpt", script="gpt2.py",
             argv=("--model", "350m", "--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast",
                   "--checkpoint")),
    Workload(name="gpt2_760m_bf16", script="gpt2.py",
             argv=("--model", "760m", "--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast")),
    # Llama-style: 150M, 1B, 3B parameters
    Workload(name="llama_150m_bf16", script="llama.py",
             argv=("--model", "150m", "--batch-size", "16", "--seq-len", "1024", "--precision", "bf16-autocast")),
    Workload(name="llama_1b_bf16", script="llama.py",
             argv=("--model", "1b", "--batch-size", "4", "--seq-len", "2048", "--precision", "bf16-autocast"),
             held_out=True),
    Workload(name="llama_3b_bf16_ckpt", script="llama.py",
             argv=("--model", "3b", "--batch-size", "4", "--seq-len", "2048", "--precision", "bf16", "--checkpoint")),
    # Convolutional networks
    Workload(name="resnet50_fp32", script="resnet50.py", argv=("--batch-size", "64", "--precision", "fp32")),
    # bf16 CNNs for calibration (added 2026-11-29 after the held-out bf16 channels-last CNNs were seen
    # to be over-predicted; 160 px and batch 96, unlike the held-out 224 px / batch 128 and CIFAR runs).
    Workload(name="resnet50_bf16_nchw_160", script="resnet50.py",
             argv=("--batch-size", "96", "--image-size", "160", "--precision", "bf16-autocast")),
    Workload(name="resnet50_bf16_channels_last_160", script="resnet50.py",
             argv=("--batch-size", "96", "--image-size", "160", "--precision", "bf16-autocast", "--channels-last")),
    # A calibration CNN with depthwise convolutions and inverted residuals (added 2026-12-03, session 20:
    # the calibration CNNs were all ResNet-50s, so the convolution factor was fitted on dense
    # convolutions alone). Measured 2026-12-03 (session 21: benchmarks/gpu/session21_h200/COMMANDS.md).
    Workload(name="mobilenet_v2_bf16_channels_last", script="mobilenet_v2.py",
             argv=("--batch-size", "128", "--precision", "bf16-autocast", "--channels-last")),
    Workload(name="resnet50_bf16_channels_last", script="resnet50.py",
             argv=("--batch-size", "128", "--precision", "bf16-autocast", "--channels-last"), held_out=True),
    Workload(name="cifar_resnet18_bf16", script="cifar_resnet18.py",
             argv=("--batch-size", "256", "--precision", "bf16-autocast", "--channels-last"), held_out=True),
    Workload(name="convnext_tiny_bf16", script="convnext.py",
             argv=("--batch-size", "64", "--precision", "bf16-autocast"), held_out=True),
    Workload(name="unet_ddpm_bf16", script="unet.py",
             argv=("--batch-size", "64", "--image-size", "64", "--precision", "bf16-autocast"), held_out=True),
    # Vision transformer
    Workload(name="vit_base_bf16", script="vit.py", argv=("--batch-size", "64", "--precision", "bf16-autocast")),
    # Hugging Face transformers, built from configs
    Workload(name="hf_gpt2_bf16", script="hf_gpt2.py",
             argv=("--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast"), held_out=True),
    Workload(name="hf_llama_bf16", script="hf_llama.py",
             argv=("--batch-size", "8", "--seq-len", "1024", "--precision", "bf16-autocast")),
    Workload(name="hf_bert_bf16", script="hf_bert.py",
             argv=("--batch-size", "32", "--seq-len", "512", "--precision", "bf16-autocast")),
    Workload(name="hf_t5_bf16", script="hf_t5.py",
             argv=("--batch-size", "16", "--source-len", "512", "--target-len", "128", "--precision", "bf16-autocast"),
             held_out=True),
    # Other transformer and sequence models
    Workload(name="torch_transformer_bf16", script="torch_transformer.py",
             argv=("--batch-size", "32", "--seq-len", "512", "--precision", "bf16-autocast")),
    Workload(name="moe_top2_bf16", script="moe.py",
             argv=("--batch-size", "8", "--seq-len", "1024", "--num-experts", "8", "--top-k", "2")),
    Workload(name="lstm_lm_fp32", script="lstm_lm.py", argv=("--batch-size", "64", "--seq-len", "128")),
    Workload(name="dlrm_fp32", script="dlrm.py", argv=("--batch-size", "4096", "--rows-per-table", "200000")),
    # Host-overhead bound: thousands of microsecond kernels per step
    Workload(name="mlp_tiny_adamw", script="mlp_tiny.py",
             argv=("--depth", "48", "--width", "256", "--batch-size", "64", "--optimizer", "adamw")),
    Workload(name="mlp_tiny_deep_sgd_bf16", script="mlp_tiny.py",
             argv=("--depth", "96", "--width", "256", "--batch-size", "64", "--optimizer", "sgd",
                   "--precision", "bf16-autocast"), held_out=True),
    # Added 2026-12-06 (session 38): predicted and the predictions committed before any GPU ran them
    # (benchmarks/validation/PREREGISTERED.md); the held-out ones chosen before either.
    Workload(name="hf_qwen2_0p5b_bf16", script="hf_qwen2.py",
             argv=("--batch-size", "4", "--seq-len", "1024", "--precision", "bf16-autocast")),
    Workload(name="hf_whisper_base_bf16", script="hf_whisper.py",
             argv=("--batch-size", "16", "--label-len", "128", "--precision", "bf16-autocast"), held_out=True),
    Workload(name="efficientnet_b0_bf16_channels_last", script="efficientnet.py",
             argv=("--batch-size", "128", "--precision", "bf16-autocast", "--channels-last"), held_out=True),
    Workload(name="llama_1b_bf16_seq4096_ckpt", script="llama.py",
             argv=("--model", "1b", "--batch-size", "2", "--seq-len", "4096", "--precision", "bf16", "--checkpoint"),
             held_out=True),
    Workload(name="vit_large_bf16_ckpt", script="vit.py",
             argv=("--batch-size", "32", "--dim", "1024", "--depth", "24", "--n-heads", "16", "--precision",
                   "bf16-autocast", "--checkpoint")),
    Workload(name="lstm_lm_3layer_seq256_fp32", script="lstm_lm.py",
             argv=("--batch-size", "32", "--seq-len", "256", "--hidden-size", "768", "--num-layers", "3"),
             held_out=True),
    Workload(name="unet_fp32_128px", script="unet.py",
             argv=("--batch-size", "16", "--image-size", "128", "--base-channels", "64", "--precision", "fp32")),
)
