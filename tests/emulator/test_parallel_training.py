"""DDP, FSDP2, FSDP1, tensor and pipeline parallelism run unmodified, and record the collectives they make.

Each case emulates one rank of a 2-rank world in a fresh process (`emulate_rank_isolated`) and checks
the recorded NCCL calls against counts and sizes computed by hand from the model's shapes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
MiB = 1 << 20
F32, BF16 = 4, 2

# The GPT of examples/train_gpt.py in a tiny size: B sequences of T tokens, width C, L blocks, V tokens.
B, T, C, L, V = 2, 64, 64, 2, 512
TINY = ["--batch", str(B), "--seq", str(T), "--dim", str(C), "--layers", str(L), "--heads", "4", "--vocab", str(V),
        "--steps", "2"]
BLOCK_PARAMS = (
    2 * C  # ln1
    + 3 * C * C + 3 * C  # qkv
    + C * C + C  # proj
    + 2 * C  # ln2
    + 4 * C * C + 4 * C  # fc
    + 4 * C * C + C  # out
)
ROOT_PARAMS = V * C + T * C + 2 * C  # wte (tied with lm_head), wpe, ln_f

PP = ["--batch", str(B), "--seq", str(T), "--dim", str(C), "--layers", "4", "--heads", "4", "--vocab", str(V),
      "--steps", "2", "--pp", "2", "--accum", "2"]
MICRO_BATCHES = 2
PIPELINE_CASES = [
    # (schedule, --dp, rank, messages per micro-batch each way, activation element size)
    ("gpipe", "ddp", 0, 1, F32),  # stage 0 sends activations, receives their gradients; fp32 residual stream
    ("1f1b", "ddp", 1, 1, F32),  # stage 1 receives activations, sends their gradients
    # 4 stages on 2 ranks: rank 0 holds stages 0 and 2 (sends 0->1, 2->3 and the gradient 2->1), rank 1 1 and 3.
    ("interleaved", "ddp", 0, 3, F32),
    ("interleaved", "ddp", 1, 3, F32),
    # FSDP's mixed precision casts every wrapped module's inputs, so stages exchange bf16.
    ("1f1b", "fsdp", 1, 1, BF16),
]
JOBS = [
    (GPT, TINY, 0),
    (SCRIPTS / "ddp_buckets.py", [], 0),
    (SCRIPTS / "ddp_buckets.py", ["--bucket-cap-mb", "2"], 0),
    (SCRIPTS / "fsdp_padding.py", [], 0),
    (SCRIPTS / "fsdp_padding.py", ["--keep-unsharded"], 0),
    (SCRIPTS / "fsdp_padding.py", ["--host-model"], 0),
    (SCRIPTS / "fsdp_padding.py", ["--host-model", "--host-grads"], 0),
    (SCRIPTS / "fsdp1_wrap.py", ["device-id"], 0),
    (SCRIPTS / "fsdp1_wrap.py", ["cuda-first"], 0),
    (GPT, [*TINY, "--dp", "fsdp"], 0),
    (GPT, [*TINY, "--tp", "2", "--dp", "fsdp"], 0),
    (GPT, [*TINY, "--dp", "fsdp", "--init-device", "meta"], 0),
    *((GPT, [*PP, "--pp-schedule", schedule, "--dp", dp], rank) for schedule, dp, rank, _, _ in PIPELINE_CASES),
]


@pytest.fixture(scope="module", autouse=True)
def _start_every_emulation(emulate_rank_isolated):
    for script, args, rank in JOBS:
        emulate_rank_isolated.prefetch(script, args, rank=rank, world_size=2)


def _rows(result) -> list[dict]:
    assert result.exit_code == 0, result.error
    return result.table.to_pylist()


def _calls(rows: list[dict], op: str, iteration: int, phase: str | None = None) -> list[dict]:
    return [
        r for r in rows
        if r["op"] == f"nccl:{op}" and r["iteration"] == iteration and (phase is None or r["phase"] == phase)
    ]


def _sizes(calls: list[dict]) -> list[int]:
    return [r["message_bytes"] for r in calls]


# -- DDP ---------------------------------------------------------------------------------------------


def test_ddp_all_reduces_every_gradient_byte_each_iteration(emulate_rank_isolated):
    rows = _rows(emulate_rank_isolated(GPT, TINY, rank=0, world_size=2))
    gradient_bytes = (ROOT_PARAMS + L * BLOCK_PARAMS) * F32  # fp32 parameters, fp32 gradients
    for iteration in (0, 1):
        calls = _calls(rows, "all_reduce", iteration)
        assert all(r["phase"] == "backward" and r["group_ranks"] == [0, 1] for r in calls)
        assert sum(_sizes(calls)) == gradient_bytes


def test_ddp_run_prints_no_device_timer_warning():
    # DDP's logger warned from C++ on every emulated DDP run that it times only CPU and CUDA devices.
    driver = ("import sys\nfrom maya.world.rank_emulation import emulate_rank\n"
              "emulate_rank(sys.argv[1], [], 'h200', 0, 2, 2)\n")
    proc = subprocess.run([sys.executable, "-c", driver, str(SCRIPTS / "ddp_buckets.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Time stats" not in proc.stderr


def test_ddp_first_bucket_is_capped_at_1_MiB(emulate_rank_isolated):
    # Five 1 MiB gradients become ready last layer first; DDP's default caps are 1 MiB for the first
    # bucket and 25 MiB after it: [w4], then [w3, w2, w1, w0].
    rows = _rows(emulate_rank_isolated(SCRIPTS / "ddp_buckets.py", [], rank=0, world_size=2))
    assert _sizes(_calls(rows, "all_reduce", 1)) == [1 * MiB, 4 * MiB]


def test_ddp_buckets_follow_bucket_cap_mb_and_overlap_backward(emulate_rank_isolated):
    # A user-given cap applies to the first bucket too: [w4, w3], [w2, w1], [w0].
    rows = _rows(emulate_rank_isolated(SCRIPTS / "ddp_buckets.py", ["--bucket-cap-mb", "2"], rank=0, world_size=2))
    calls = _calls(rows, "all_reduce", 1)
    assert _sizes(calls) == [2 * MiB, 2 * MiB, 1 * MiB]
    backward_matmuls = [r for r in rows if r["iteration"] == 1 and r["phase"] == "backward" and r["op"] == "aten::mm"]
    assert calls[0]["seq"] < backward_matmuls[-1]["seq"]  # issued while backward still computes


# -- FSDP2 -------------------------------------------------------------------------------------------


def test_fsdp_gathers_padded_blocks_and_regathers_them_for_backward(emulate_rank_isolated):
    rows = _rows(emulate_rank_isolated(SCRIPTS / "fsdp_padding.py", [], rank=0, world_size=2))
    # Each parameter's dim 0 is padded to a multiple of 2 ranks: Linear(5, 3) -> (4x5 + 4) = 24
    # elements, Linear(3, 7) -> (8x3 + 8) = 32, the root's Linear(7, 5) -> (6x7 + 6) = 48.
    block0, block2, root = 24, 32, 48
    for iteration in (0, 1):
        assert _sizes(_calls(rows, "all_gather", iteration, "forward")) == [root * BF16, block0 * BF16, block2 * BF16]
        assert _sizes(_calls(rows, "all_gather", iteration, "backward")) == [block2 * BF16, block0 * BF16]
        reduce_scatters = _calls(rows, "reduce_scatter", iteration)
        assert sorted(_sizes(reduce_scatters)) == sorted([root * F32, block0 * F32, block2 * F32])  # reduce_dtype
        assert {r["reduce_op"] for r in reduce_scatters} == {"avg"}


def test_fsdp_without_reshard_after_forward_does_not_regather(emulate_rank_isolated):
    rows = _rows(emulate_rank_isolated(SCRIPTS / "fsdp_padding.py", ["--keep-unsharded"], rank=0, world_size=2))
    assert _sizes(_calls(rows, "all_gather", 1, "forward")) == [48 * BF16, 24 * BF16, 32 * BF16]
    assert _calls(rows, "all_gather", 1, "backward") == []
    assert len(_calls(rows, "reduce_scatter", 1)) == 3


def _steady(rows: list[dict]) -> list[tuple]:
    """What the iterations after the first launched, in order (the first also holds the model's move)."""
    return [(r["iteration"], r["phase"], r["kind"], r["op"], r["message_bytes"]) for r in rows if r["iteration"] >= 1]


@pytest.mark.parametrize("host_args", [["--host-model"], ["--host-model", "--host-grads"]])
def test_fsdp_of_a_model_built_on_the_host_records_what_a_moved_model_does(emulate_rank_isolated, host_args):
    # fully_shard moves a host module's tensors by setting `.data` to their GPU copies, which a host
    # tensor cannot take from an emulated one (it failed in set_data); its modules' parameters are
    # rebuilt on the emulated GPU instead, with the host gradients they hold.
    moved = _rows(emulate_rank_isolated(SCRIPTS / "fsdp_padding.py", [], rank=0, world_size=2))
    host = _rows(emulate_rank_isolated(SCRIPTS / "fsdp_padding.py", host_args, rank=0, world_size=2))
    assert _steady(host) == _steady(moved) and _calls(host, "all_gather", 1)


# -- FSDP1 (FullyShardedDataParallel) ----------------------------------------------------------------

FSDP1_WIDTH = 256
FSDP1_BLOCK = 2 * 4 * FSDP1_WIDTH * FSDP1_WIDTH + 5 * FSDP1_WIDTH  # up + down, weights and biases: one flat parameter
FSDP1_ROOT = 10 * FSDP1_WIDTH + 10  # the head, in the root's flat parameter


@pytest.mark.parametrize("mode", ["device-id", "cuda-first"])
def test_fsdp1_gathers_each_wrapped_block_per_pass(emulate_rank_isolated, mode):
    # `device-id`: FSDP moves the host model itself (`device_id=torch.cuda.current_device()`, an int,
    # which torch.device() took as the emulation's proxy device: FSDP then failed on "cuda:0 vs maya:0").
    rows = _rows(emulate_rank_isolated(SCRIPTS / "fsdp1_wrap.py", [mode], rank=0, world_size=2))
    assert _sizes(_calls(rows, "all_gather", 1, "forward")) == [FSDP1_ROOT * BF16] + [FSDP1_BLOCK * BF16] * 4
    assert _sizes(_calls(rows, "all_gather", 1, "backward")) == [FSDP1_BLOCK * BF16] * 4  # resharded after forward
    assert sorted(_sizes(_calls(rows, "reduce_scatter", 1))) == sorted([FSDP1_ROOT * F32] + [FSDP1_BLOCK * F32] * 4)


def test_fsdp1_with_every_parameter_wrapped_and_its_full_state_dict(emulate_rank_isolated):
    # The root FSDP instance holds no parameter of its own: FSDP took `torch.device(current_device())`,
    # under emulation the proxy device, and stopped on "maya:0 vs cuda:0".
    # The sharded state dict's ShardedTensors ask c10d for the group's device, which the emulated group
    # did not report ("no backend has been registered with this ProcessGroup").
    script, args = SCRIPTS / "fsdp1_wrap.py", ["device-id", "all-wrapped", "full-state-dict", "sharded-state-dict"]
    rows = _rows(emulate_rank_isolated(script, args, rank=0, world_size=2))
    assert _sizes(_calls(rows, "all_gather", 1, "forward")) == [FSDP1_BLOCK * BF16] * 4
    # Offloading the gathered parameters to the host moves them in place, which is refused by name (it
    # failed in a bare `set_data` error); the steps before it are kept.
    offload = emulate_rank_isolated(script, [*args[:2], "full-state-dict-offload"], rank=0, world_size=2)
    assert offload.exit_code == 1 and "full state dict with offload_to_cpu=True cannot be emulated" in offload.error
    ends = lambda table: [r["iteration"] for r in table if r["kind"] == "iteration_end"]  # noqa: E731
    assert ends(offload.table.to_pylist()) == ends(rows) == [0, 1]


def test_fsdp1_moving_a_host_model_records_what_a_moved_model_does(emulate_rank_isolated):
    host = _rows(emulate_rank_isolated(SCRIPTS / "fsdp1_wrap.py", ["device-id"], rank=0, world_size=2))
    moved = _rows(emulate_rank_isolated(SCRIPTS / "fsdp1_wrap.py", ["cuda-first"], rank=0, world_size=2))
    assert _steady(host) == _steady(moved)


def test_fsdp_gpt_gathers_each_block_once_per_pass_and_steps_on_shards(emulate_rank_isolated):
    rows = _rows(emulate_rank_isolated(GPT, [*TINY, "--dp", "fsdp"], rank=0, world_size=2))
    # No padding: every dim 0 of the tiny GPT is even. bf16 parameters, fp32 reduce_dtype.
    assert _sizes(_calls(rows, "all_gather", 1, "forward")) == [ROOT_PARAMS * BF16] + [BLOCK_PARAMS * BF16] * L
    assert _sizes(_calls(rows, "all_gather", 1, "backward")) == [BLOCK_PARAMS * BF16] * L
    assert sorted(_sizes(_calls(rows, "reduce_scatter", 1))) == sorted([ROOT_PARAMS * F32] + [BLOCK_PARAMS * F32] * L)
    # AdamW runs on the local shards of the DTensor parameters (the embedding's rows split in two).
    steps = [r for r in rows if r["iteration"] == 1 and r["op"] == "aten::_foreach_addcdiv_.ScalarList"]
    assert len(steps) == 1 and steps[0]["phase"] == "optimizer"
    assert [V // 2, C] in steps[0]["input_shapes"] and [V, C] not in steps[0]["input_shapes"]


def test_meta_init_allocates_only_this_ranks_shard(emulate_rank_isolated):
    # By default each rank builds the whole model in fp32 on the GPU, then FSDP shards it; with
    # --init-device meta, rank 0 of 2 only ever allocates its half before the first step's batch.
    full_bytes = (ROOT_PARAMS + L * BLOCK_PARAMS) * F32

    def build_peak_bytes(args):
        rows = _rows(emulate_rank_isolated(GPT, [*TINY, "--dp", "fsdp", *args], rank=0, world_size=2))
        first_batch = next(i for i, r in enumerate(rows) if r["op"] == "aten::randint.low")
        return max(r["allocated_bytes"] for r in rows[:first_batch])

    assert build_peak_bytes([]) >= full_bytes
    assert full_bytes // 2 <= build_peak_bytes(["--init-device", "meta"]) < full_bytes // 2 + MiB


# -- Tensor parallelism ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tp_rows(emulate_rank_isolated):
    return _rows(emulate_rank_isolated(GPT, [*TINY, "--tp", "2", "--dp", "fsdp"], rank=0, world_size=2))


def test_tp_all_reduces_rowwise_outputs_twice_per_block(tp_rows):
    for block in range(L):
        calls = [r for r in _calls(tp_rows, "all_reduce", 1, "forward") if r["module"] == f"blocks.{block}"]
        # proj and out are row-wise: their partial (B, T, C) outputs are summed, in bf16 under autocast.
        assert _sizes(calls) == [B * T * C * BF16] * 2
        assert all(r["group_ranks"] == [0, 1] for r in calls)


def test_tp_records_each_local_shard_gemm_once_in_bf16(tp_rows):
    # Column-wise qkv and fc hold half the output features, row-wise proj and out half the input features.
    expected = {
        "qkv": [[3 * C // 2], [B * T, C], [C, 3 * C // 2]],
        "proj": [[C], [B * T, C // 2], [C // 2, C]],
        "fc": [[4 * C // 2], [B * T, C], [C, 4 * C // 2]],
        "out": [[C], [B * T, 4 * C // 2], [4 * C // 2, C]],
    }
    for iteration in (0, 1):
        for name, shapes in expected.items():
            gemms = [
                r for r in tp_rows
                if r["iteration"] == iteration and r["module"] == f"blocks.0.{name}" and r["op"] == "aten::addmm"
            ]
            assert [(g["input_shapes"], g["input_dtypes"]) for g in gemms] == [(shapes, ["bfloat16"] * 3)], name


# -- Pipeline parallelism ----------------------------------------------------------------------------

@pytest.mark.parametrize("schedule,dp,rank,messages_per_micro_batch,element_bytes", PIPELINE_CASES)
def test_pipeline_sends_one_activation_and_one_gradient_per_micro_batch(
    emulate_rank_isolated, schedule, dp, rank, messages_per_micro_batch, element_bytes
):
    rows = _rows(emulate_rank_isolated(GPT, [*PP, "--pp-schedule", schedule, "--dp", dp], rank=rank, world_size=2))
    for op in ("send", "recv"):
        calls = _calls(rows, op, 1)
        assert _sizes(calls) == [B * T * C * element_bytes] * (messages_per_micro_batch * MICRO_BATCHES), op
        assert {r["peer"] for r in calls} == {1 - rank}
