"""Every validation workload's model trains for one step on the CPU in a tiny configuration.

The scripts target CUDA, but each exposes parse_args, build_model(args, device), get_batch(args,
device) and compute_loss(model, batch); these tests call them with device "cpu", so a broken model
is found here rather than on the GPU machine.
"""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

WORKLOADS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "validation" / "workloads"

TINY_ARGV = {
    "gpt2.py": ["--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--seq-len", "16", "--batch-size", "2",
                "--checkpoint"],
    "gpt2_data_parallel.py": ["--dp", "fsdp", "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--seq-len", "16",
                              "--batch-size", "2"],
    "llama.py": ["--n-layers", "2", "--dim", "64", "--n-heads", "4", "--n-kv-heads", "2", "--ffn-hidden-dim", "96",
                 "--seq-len", "16", "--batch-size", "2", "--checkpoint"],
    "resnet50.py": ["--batch-size", "2", "--image-size", "32", "--base-width", "8", "--channels-last"],
    "vit.py": ["--batch-size", "2", "--image-size", "32", "--patch-size", "8", "--dim", "32", "--depth", "2",
               "--n-heads", "2", "--checkpoint"],
    "hf_gpt2.py": ["--n-layer", "2", "--n-embd", "32", "--n-head", "2", "--seq-len", "16", "--batch-size", "2"],
    "hf_llama.py": ["--num-layers", "2", "--hidden-size", "64", "--intermediate-size", "96", "--num-heads", "4",
                    "--num-kv-heads", "2", "--seq-len", "16", "--batch-size", "2"],
    "hf_bert.py": ["--num-layers", "2", "--hidden-size", "32", "--num-heads", "2", "--seq-len", "16",
                   "--batch-size", "2"],
    "hf_t5.py": ["--num-layers", "2", "--d-model", "32", "--num-heads", "2", "--source-len", "16",
                 "--target-len", "8", "--batch-size", "2"],
    "mlp_tiny.py": ["--depth", "3", "--batch-size", "4"],
    "lstm_lm.py": ["--batch-size", "2", "--seq-len", "8", "--hidden-size", "32"],
    "cifar_resnet18.py": ["--batch-size", "2", "--channels-last"],
    "mobilenet_v2.py": ["--batch-size", "2", "--image-size", "32", "--channels-last"],
    "convnext.py": ["--batch-size", "2", "--image-size", "32", "--base-width", "8", "--depths", "1", "1", "1", "1"],
    "unet.py": ["--batch-size", "2", "--image-size", "32", "--base-channels", "32"],
    "moe.py": ["--batch-size", "2", "--seq-len", "16", "--dim", "32", "--n-heads", "2", "--n-layers", "2",
               "--expert-hidden-dim", "48", "--num-experts", "4"],
    "dlrm.py": ["--batch-size", "8", "--rows-per-table", "100", "--embedding-dim", "16"],
    "torch_transformer.py": ["--batch-size", "2", "--seq-len", "16", "--d-model", "32", "--n-heads", "2",
                             "--n-layers", "2"],
    "hf_qwen2.py": ["--num-layers", "2", "--hidden-size", "64", "--intermediate-size", "96", "--num-heads", "4",
                    "--num-kv-heads", "2", "--seq-len", "16", "--batch-size", "2"],
    "hf_whisper.py": ["--d-model", "32", "--layers", "1", "--heads", "2", "--label-len", "8", "--batch-size", "2"],
    "efficientnet.py": ["--batch-size", "2", "--image-size", "32", "--channels-last"],
}


def test_every_workload_script_has_a_tiny_config():
    assert sorted(TINY_ARGV) == sorted(p.name for p in WORKLOADS_DIR.glob("*.py"))


@pytest.mark.parametrize("script", sorted(TINY_ARGV))
def test_tiny_training_step_on_cpu(script):
    torch.manual_seed(0)
    spec = importlib.util.spec_from_file_location(f"tiny_{Path(script).stem}", WORKLOADS_DIR / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.device == "cuda"  # the scripts are written for the GPU; only this test uses the CPU

    args = module.parse_args(TINY_ARGV[script])
    model = module.build_model(args, "cpu")
    model.train()
    loss = module.compute_loss(model, module.get_batch(args, "cpu"))
    assert loss.dim() == 0 and math.isfinite(loss.item())
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None for g in grads), f"{script}: a parameter got no gradient"
    assert any(g.abs().sum() > 0 for g in grads)


def test_fp16_grad_scaler_step_emulates_and_its_scaler_ops_are_estimated_by_a_model(tmp_path):
    # gpt2.py --precision fp16-autocast (the held-out gpt2_124m_fp16_scaler) trains through
    # GradScaler: its unscale and update ops are recorded, and the shipped foreach model times them.
    import contextlib
    import io

    from maya.api import emulate
    from maya.estimator.estimate import estimate_trace
    from maya.trace.store import read_rank_trace

    argv = [*TINY_ARGV["gpt2.py"], "--precision", "fp16-autocast", "--steps", "1", "--warmup", "1"]
    with contextlib.redirect_stdout(io.StringIO()):
        summary = emulate(str(WORKLOADS_DIR / "gpt2.py"), argv, gpu="h200", trace_dir=tmp_path)
    assert summary.exit_code == 0
    rows = estimate_trace(read_rank_trace(tmp_path, 0), gpu="h200")
    scaler = rows[rows["op"].isin(["aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"])]
    assert set(scaler["op"]) == {"aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"}
    assert set(scaler["estimate_source"]) == {"catboost"}
