"""Emulations that share a process stay apart (maya.emulator.torch_caches): reused workers rely on it."""

import subprocess
import sys
from pathlib import Path

import torch

from maya.world.rank_emulation import emulate_rank

GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
TINY_TP_PP = ["--steps", "1", "--seq", "64", "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512",
              "--batch", "2", "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2"]


def test_ranks_of_one_world_emulated_in_turn_in_one_process():
    # Ranks of one world build equal-looking meshes (same rank map and names) over different
    # process groups; without per-emulation mesh identity, a later rank replayed an earlier one's
    # cached DTensor plans (the autograd thread's C++ cache survives clearing):
    # "Could not resolve the process group registered under the name 9".
    first = emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert first.exit_code == 0, first.error
    for rank in (1, 2, 4):
        result = emulate_rank(str(GPT), TINY_TP_PP, "h100", rank, 8, 8)
        assert result.exit_code == 0, f"rank {rank}: {result.error}"
    again = emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert again.exit_code == 0, again.error
    assert again.table.equals(first.table)


def test_meshes_outside_an_emulation_are_untouched():
    from torch.distributed.device_mesh import DeviceMesh

    emulate_rank(str(GPT), TINY_TP_PP, "h100", 0, 8, 8)
    assert DeviceMesh.__init__.__module__ == "torch.distributed.device_mesh"
    assert torch.distributed.is_available()


SWITCHES = """
import torch
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.fp32_precision = "tf32"  # PyTorch 2.9's TF32 API; the older flags can no longer be read
torch.backends.cudnn.conv.fp32_precision = "ieee"
torch.backends.cuda.enable_flash_sdp(False)
torch.set_grad_enabled(False)
x = torch.randn(2, 3, 16, 16, device="cuda")
torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3, device="cuda"))
torch.randn(64, 64, device="cuda") @ torch.randn(64, 64, device="cuda")
"""

CONV = """
import torch
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Linear(14, 14)).cuda()
model(torch.randn(2, 3, 16, 16, device="cuda")).sum().backward()
"""


def _tf32_of(table, op):
    rows = table.to_pandas()
    return rows.loc[rows["op"] == op, "allow_tf32"].tolist()


def test_a_script_that_sets_global_switches_leaves_later_emulations_as_in_a_fresh_process(tmp_path):
    # cudnn.benchmark, TF32 and grad mode are process-wide and read by the recorder: a U-Net emulated
    # after a ResNet script that set cudnn.benchmark recorded autotuned convolutions (1.4% faster).
    switches, conv = tmp_path / "switches.py", tmp_path / "conv.py"
    switches.write_text(SWITCHES)
    conv.write_text(CONV)
    before = (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.fp32_precision,
              torch.backends.cudnn.conv.fp32_precision, torch.backends.cuda.flash_sdp_enabled(), torch.is_grad_enabled())
    first = emulate_rank(str(conv), [], "h200", 0, 1, 1)
    flagged = emulate_rank(str(switches), [], "h200", 0, 1, 1)
    assert flagged.exit_code == 0, flagged.error
    # The script's own TF32 choices by the newer API are what its ops record.
    assert _tf32_of(flagged.table, "aten::mm") == [True]
    assert _tf32_of(flagged.table, "aten::convolution") == [False]
    assert (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.fp32_precision,
            torch.backends.cudnn.conv.fp32_precision, torch.backends.cuda.flash_sdp_enabled(), torch.is_grad_enabled()) == before
    torch.get_float32_matmul_precision()  # the older TF32 API reads again (PyTorch raises once the two disagree)
    again = emulate_rank(str(conv), [], "h200", 0, 1, 1)
    assert again.exit_code == 0, again.error
    assert again.table.equals(first.table)


DYNAMO_TABLES = """
import sys
import maya
assert "torch._dynamo" not in sys.modules
s = maya.emulate(sys.argv[1], trace_dir=sys.argv[2])
assert s.exit_code == 0, s.error
leaks = []
for name, module in list(sys.modules.items()):
    if module is None or not name.startswith("torch._dynamo"):
        continue
    for key, value in list(vars(module).items()):
        items = value if isinstance(value, (set, frozenset, list, tuple)) else value.keys() if isinstance(value, dict) else ()
        leaks += [f"{name}.{key}" for x in items if (getattr(x, "__module__", "") or "").startswith("maya.")]
print(sorted(set(leaks)))
"""


def test_torch_dynamo_tables_are_built_from_torch_own_functions(tmp_path):
    # Fake tensors import torch._dynamo on first use. Imported inside the first emulation of a process,
    # its module-level tables took Maya's stand-ins for torch.cuda functions (constant_fold_functions:
    # a later torch.compile would fold them), and PyTorch 2.14's read `torch.cuda.use_mem_pool.__wrapped__`,
    # which the stand-in lacks, so every emulation failed.
    script = tmp_path / "tiny.py"
    script.write_text("import torch\n(torch.randn(4, device='cuda') * 2).sum().item()\n")
    done = subprocess.run([sys.executable, "-c", DYNAMO_TABLES, str(script), str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
