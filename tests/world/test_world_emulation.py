"""Multi-rank emulation on a real local Ray: rank classes, traces, summaries, and failures.

Every rank runs in its own Ray actor process (`ray_local`: 2 CPUs). The models are the tiniest
`examples/train_gpt.py` that still has every parallelism, for 2 steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import maya
from maya.cli.main import main
from maya.terminal_summary import terminal_summary
from maya.trace import IncompleteTraceError, read_meta, read_rank_trace
from maya.world import ActorDiedError, DedupMismatchError, TooManyRankClassesError

SCRIPTS = Path(__file__).parents[1] / "emulator" / "scripts"
GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"
F32, BF16 = 4, 2

B, T, C, L, V = 2, 64, 64, 2, 512
TINY = ["--batch", str(B), "--seq", str(T), "--dim", str(C), "--layers", str(L), "--heads", "4", "--vocab", str(V),
        "--steps", "2"]
GRADIENT_BYTES = (V * C + T * C + 2 * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 8 * C * C + 5 * C)) * F32


def _collectives(trace_dir, rank: int, op: str, iteration: int = 1) -> list[dict]:
    rows = read_rank_trace(trace_dir, rank).to_pylist()
    return [r for r in rows if r["op"] == f"nccl:{op}" and r["iteration"] == iteration]


def test_ddp_world_of_64_emulates_rank_0_and_one_probe(ray_local, tmp_path):
    s = maya.emulate(GPT, TINY, nnodes=8, nproc_per_node=8, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert s.world_size == 64 and s.emulated_ranks == [0]
    assert s.extra["rank_classes"] == [{"representative": 0, "ranks": 64, "members": "0-63"}]
    # Emulated: rank 0, and rank 63, the probe at the last position of the world group.
    assert sorted(s.extra["emulation_s"], key=int) == ["0", "63"]
    assert len(s.iterations) == 2 and all(it.time_ms > 0 for it in s.iterations)
    # DDP's all-reduce volume is the gradient, whatever the world size.
    assert sum(r["message_bytes"] for r in _collectives(s.trace_dir, 0, "all_reduce")) == GRADIENT_BYTES
    meta = read_meta(s.trace_dir)
    assert meta["world_size"] == 64 and meta["rank_to_representative"] == {str(r): 0 for r in range(64)}


def test_known_variant_families_skip_the_probes(ray_local, tmp_path):
    # Mesh (pp, dp, tp) at 8: the first run probes ranks 1 (tp), 2 (dp) and 4 (pp) and finds that only
    # the pipeline family varies; given that, a second run (another micro-batch count) emulates rank 0
    # and the other stage's representative only, and finds the same classes.
    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--steps", "1"]
    first = maya.emulate(GPT, [*args, "--accum", "2"], nproc_per_node=8, trace_dir=tmp_path / "a2")
    assert first.exit_code == 0, first.error
    assert sorted(first.extra["emulation_s"], key=int) == ["0", "1", "2", "4"]
    variant = read_meta(first.trace_dir)["variant_families"]
    assert len(variant) == 1
    second = maya.emulate(GPT, [*args, "--accum", "4"], nproc_per_node=8, trace_dir=tmp_path / "a4", variant_families=variant)
    assert second.exit_code == 0, second.error
    assert sorted(second.extra["emulation_s"], key=int) == ["0", "4"]
    assert second.extra["rank_classes"] == first.extra["rank_classes"]


def test_tp_pp_dp_mix_at_8_has_one_class_per_pipeline_stage(ray_local, tmp_path):
    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2"]
    s = maya.emulate(GPT, args, nproc_per_node=8, trace_dir=tmp_path / "t", verify_dedup=True)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 4]
    assert s.extra["rank_classes"] == [
        {"representative": 0, "ranks": 4, "members": "0-3"},
        {"representative": 4, "ranks": 4, "members": "4-7"},
    ]
    # Mesh (pp, dp, tp): rank 0, probes 1 (tp), 2 (dp) and 4 (pp), and each class's highest rank to verify.
    assert sorted(s.extra["emulation_s"], key=int) == ["0", "1", "2", "3", "4", "7"]
    assert len(s.iterations) == 2 and all(it.time_ms > 0 for it in s.iterations)
    assert read_meta(s.trace_dir)["rank_to_representative"] == {str(r): 0 if r < 4 else 4 for r in range(8)}
    # Stage 0 sends its 2 micro-batches' bf16 activations to stage 1, which receives the same bytes.
    activation = B * T * C * BF16
    assert [r["message_bytes"] for r in _collectives(s.trace_dir, 0, "send")] == [activation] * 2
    assert [r["message_bytes"] for r in _collectives(s.trace_dir, 4, "recv")] == [activation] * 2
    assert {r["peer"] for r in _collectives(s.trace_dir, 4, "recv")} == {0}


@pytest.mark.parametrize("schedule, in_process", [("1f1b", False), ("interleaved", True)])
def test_pipeline_stages_without_example_tensors_learn_their_shapes_from_each_other(ray_local, tmp_path, schedule,
                                                                                    in_process):
    # torchtitan's stages infer their shapes at the first step: each receives the previous stage's
    # output metadata and the next stage's gradient metadata as object lists. Rank 0 stops at the
    # first receive; the stages down the pipeline are emulated, then back up (maya.emulator.object_mailbox).
    s = maya.emulate(SCRIPTS / "pipeline_dynamic_shapes.py", ["--pp", "4", "--schedule", schedule], nproc_per_node=8,
                     trace_dir=tmp_path / "t", in_process=in_process, verify_dedup=True)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 2, 4, 6]  # mesh (pp, dp): one class per pipeline rank
    assert len(s.iterations) == 2 and all(it.time_ms > 0 for it in s.iterations)
    for pp_rank, rank in enumerate(s.emulated_ranks):
        rows = read_rank_trace(s.trace_dir, rank).to_pylist()
        widths = {r["input_shapes"][1][1] for r in rows if r["op"] == "aten::addmm" and r["phase"] == "forward"}
        held = [pp_rank, pp_rank + 4] if schedule == "interleaved" else [pp_rank]  # interleaved: stages r and r + 4
        # each stage's first Linear takes 16 + 8k features: the width the stage before it sent
        assert {16 + 8 * k for k in held} <= widths, (rank, widths)
        assert any(r["op"] == "nccl:recv" for r in rows) and any(r["op"] == "nccl:send" for r in rows)


def test_a_rank_failing_in_a_reused_worker_runs_again_in_a_fresh_one(ray_local, tmp_path):
    # Ray reuses worker processes; a library's module state (this one refuses a second initialization,
    # as Megatron's arguments do) then failed every rank after a worker's first. Four ranks on two
    # CPUs: some worker runs two, and that rank is emulated again in a process of its own.
    lines = []
    s = maya.emulate(SCRIPTS / "module_state" / "train_once.py", [], nproc_per_node=4, trace_dir=tmp_path / "t",
                     dedup=False, progress=lines.append)
    assert s.exit_code == 0, s.error
    assert any("failed in a reused worker process; emulating it again in a fresh one" in line for line in lines), lines


def test_more_rank_classes_than_allowed_fails_before_emulating_them(tmp_path):
    # Two pipeline stages are two classes; a bound of one stops after rank 0 and the probes.
    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2"]
    with pytest.raises(TooManyRankClassesError, match=r"2 rank classes over 8 ranks, more than max_rank_classes=1: "
                                                      r"the trace changes with the position in group families #\d+ \(size 2\)"):
        maya.emulate(GPT, args, nproc_per_node=8, trace_dir=tmp_path / "t", in_process=True, max_rank_classes=1)
    s = maya.emulate(GPT, args, nproc_per_node=8, trace_dir=tmp_path / "ok", in_process=True, max_rank_classes=2)
    assert s.exit_code == 0 and s.emulated_ranks == [0, 4], s.error


def test_without_a_known_order_the_last_pipeline_stage_goes_right_after_rank_0(tmp_path):
    # Mesh (pp, dp, tp) of 8: probes 4 (pp), 2 (dp) and 1 (tp). Highest first, so a check that stops
    # at the last stage (where a pipeline keeps the loss and every micro-batch's output) stops after
    # two emulations instead of four.
    from maya.world import RankCheckStop, emulate_world

    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2", "--steps", "1"]
    lines: list[str] = []
    with pytest.raises(RankCheckStop) as stop:
        emulate_world(GPT, args, gpu="h100", world_size=8, local_world_size=8, in_process=True, progress=lines.append,
                      after_rank=lambda result: "last stage" if result.rank >= 4 else None)
    assert stop.value.result.rank == 4
    assert [line.split()[1] for line in lines if "emulated in" in line] == ["0", "4"]


def test_a_world_whose_rank_0_alone_evaluates_has_two_classes(tmp_path):
    # The last position differs from rank 0 (its evaluation), but a second probe at position 1 matches
    # the last: only position 0 differs, so ranks 1-7 are one class (before: 8 classes of one rank).
    from maya.world import emulate_world

    lines: list[str] = []
    world = emulate_world(SCRIPTS / "rank0_evaluates.py", [], gpu="h200", world_size=8, local_world_size=8,
                          in_process=True, progress=lines.append)
    assert world.rank_to_representative == {0: 0, **{r: 1 for r in range(1, 8)}}
    assert sorted(world.results) == [0, 1, 7] and world.zero_only_families == world.variant_families
    assert any("varies at position 0 only" in line for line in lines)
    again = emulate_world(SCRIPTS / "rank0_evaluates.py", [], gpu="h200", world_size=8, local_world_size=8,
                          in_process=True, variant_families=world.variant_families,
                          zero_only_families=world.zero_only_families, rank_classes=world.rank_to_representative)
    assert sorted(again.results) == [0, 1] and again.zero_only_families == world.zero_only_families


def test_megatron_style_groups_give_one_class_per_pipeline_stage(tmp_path):
    # Gloo twins of the data-parallel groups, embedding groups between the pipeline groups and a group
    # of every rank last (Megatron-LM's order): the families are still tp, dp and pp (before: one
    # family of every rank was left, and each of the 8 ranks was a class of its own).
    from maya.world import emulate_world

    lines: list[str] = []
    world = emulate_world(SCRIPTS / "megatron_groups.py", [], gpu="h200", world_size=8, local_world_size=8,
                          in_process=True, progress=lines.append, verify_dedup=True)
    assert world.rank_to_representative == {r: 4 * (r >= 4) for r in range(8)}
    assert [sorted(ranks for _, ranks in world.families[i].groups) for i in world.variant_families] == [
        [(0, 4), (1, 5), (2, 6), (3, 7)]]
    assert any("2 rank class(es) over 8 ranks" in line for line in lines)


def test_ranks_whose_optimizer_shards_cut_parameters_elsewhere_are_one_class_unless_exact(tmp_path):
    # Each rank updates pieces of other shapes (rank 3 one more): the traces differ, but the collectives
    # and per-iteration FLOPs, bytes and peak memory agree, so the family is alike and its ranks share
    # rank 0's class; --verify-dedup's member (rank 3, the probe) is checked within the same tolerance.
    from maya.world import emulate_world

    script = SCRIPTS / "sharded_optimizer.py"
    lines: list[str] = []
    world = emulate_world(script, [], gpu="h200", world_size=4, local_world_size=4, in_process=True,
                          progress=lines.append, verify_dedup=True)
    assert world.rank_to_representative == dict.fromkeys(range(4), 0)
    assert world.alike_families == [0] and world.variant_families == []
    assert sorted(world.results) == [0, 3]
    assert world.results[0].table.num_rows != world.results[3].table.num_rows
    assert any("#0 (size 4): alike, its ranks one class (they differ by FLOPs 0.00%" in line for line in lines)
    exact = emulate_world(script, [], gpu="h200", world_size=4, local_world_size=4, in_process=True, exact_dedup=True)
    assert exact.rank_to_representative == {r: r for r in range(4)} and exact.alike_families == []
    # The last rank's extra copy of its shard is more bytes, not another shape: not alike.
    wide = emulate_world(script, ["--wide-last"], gpu="h200", world_size=4, local_world_size=4, in_process=True)
    assert wide.rank_to_representative == {r: r for r in range(4)} and wide.variant_families == [0]


def test_fsdp_over_512_ranks_with_uneven_vocabulary_shards_is_one_class():
    # The Llama-70B study's FSDP layout over 512 ranks at the depth it emulates: 128,256 embedding rows
    # do not divide by 512, so the last rank's shards are empty where rank 0's are full. Its trace is
    # alike rank 0's (the study's max_rank_classes=32 had failed such trials with 512 classes).
    from maya.world import emulate_world

    args = ["--steps", "1", "--seq", "4096", "--dim", "8192", "--layers", "3", "--heads", "64", "--vocab", "128256",
            "--precision", "bf16", "--init-device", "meta", "--dp", "fsdp", "--batch", "2"]
    world = emulate_world(GPT, args, gpu="h100", world_size=512, local_world_size=8, in_process=True,
                          max_rank_classes=32)
    assert sorted(world.results) == [0, 511] and world.alike_families == [0]
    assert set(world.rank_to_representative.values()) == {0}
    with pytest.raises(TooManyRankClassesError, match="512 rank classes over 512 ranks"):
        emulate_world(GPT, args, gpu="h100", world_size=512, local_world_size=8, in_process=True,
                      max_rank_classes=32, exact_dedup=True)


def test_known_rank_classes_emulate_the_representatives_and_check_rank_0s_groups(tmp_path):
    # Two pipeline stages of 2 ranks: classes {0, 1}. Given as known, only the representatives run,
    # the last stage first; classes that rank 0's group table cannot give are an error, not a trace.
    from maya.world import emulate_world

    args = [*TINY, "--pp", "2", "--accum", "2", "--steps", "1"]
    first = emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2, in_process=True)
    assert first.rank_to_representative == {0: 0, 1: 1} and len(first.variant_families) == 1
    lines: list[str] = []
    again = emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2, in_process=True, progress=lines.append,
                          variant_families=first.variant_families, rank_classes=first.rank_to_representative)
    assert [line.split()[1] for line in lines if "emulated in" in line] == ["1", "0"]
    for rank in (0, 1):
        assert again.results[rank].table.equals(first.results[rank].table)
    with pytest.raises(RuntimeError, match="rank 0's group table gives other rank classes"):
        emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2, in_process=True,
                      variant_families=first.variant_families, rank_classes={0: 0, 1: 0})
    with pytest.raises(ValueError, match="rank_classes needs variant_families"):
        emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2, in_process=True, rank_classes={0: 0, 1: 1})


def test_verify_dedup_catches_a_rank_that_differs_only_in_two_dimensions_at_once(ray_local, tmp_path):
    # Probes 1 (tp) and 2 (dp) match rank 0, so all 4 ranks form one class; rank 3 does not match.
    with pytest.raises(DedupMismatchError, match=r"ranks 0 and 3 were put in one class but record different traces"):
        maya.emulate(SCRIPTS / "corner_rank.py", nproc_per_node=4, trace_dir=tmp_path / "t", verify_dedup=True)


def test_fsdp_world_of_2_without_dedup_emulates_both_ranks(ray_local, tmp_path):
    s = maya.emulate(GPT, [*TINY, "--dp", "fsdp"], nproc_per_node=2, trace_dir=tmp_path / "t", dedup=False)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 1]
    assert [c["members"] for c in s.extra["rank_classes"]] == ["0", "1"]
    gathers = [[r["message_bytes"] for r in _collectives(s.trace_dir, rank, "all_gather")] for rank in (0, 1)]
    assert gathers[0] == gathers[1] and len(gathers[0]) == 2 * L + 1  # forward: root + blocks; backward: blocks


def test_the_commands_allocator_settings_reach_every_rank(ray_local, tmp_path, monkeypatch):
    # The Ray workers were started before the setting was made: it still reaches both ranks' allocators
    # (expandable segments: two 11 MiB tensors reserve two 20 MiB pages, not two 12 MiB segments).
    script = tmp_path / "reserved.py"
    script.write_text(
        "import torch\n"
        "x = [torch.empty(11 << 20, dtype=torch.uint8, device='cuda') for _ in range(2)]\n"
        "assert torch.cuda.memory_reserved() == 40 << 20, torch.cuda.memory_reserved()\n"
    )
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    s = maya.emulate(script, nproc_per_node=2, trace_dir=tmp_path / "t", dedup=False)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 1]


# -- bad input -------------------------------------------------------------------------------------


def test_mismatched_collectives_fail_naming_the_group_ranks_and_first_call(ray_local, tmp_path, capsys):
    # Through the CLI: maya.emulate raises the simulator's CollectiveMismatchError (a ValueError),
    # which `maya emulate` reports with exit status 2.
    code = main(["emulate", "--nproc-per-node", "2", "--trace-dir", str(tmp_path / "t"), str(SCRIPTS / "mismatched.py")])
    err = capsys.readouterr().err
    assert code == 2
    assert "mismatched collectives on group '0' call #0:" in err
    assert "rank 0 issued all_reduce of 16 bytes over ranks [0, 1]" in err
    assert "rank 1 issued all_reduce of 32 bytes over ranks [0, 1]" in err


def test_cli_reports_the_failing_rank_and_its_traceback(ray_local, tmp_path, capsys):
    code = main(["emulate", "--nproc-per-node", "2", "--trace-dir", str(tmp_path / "t"), str(SCRIPTS / "rank_raises.py")])
    err = capsys.readouterr().err
    assert code == 1
    assert "[rank 1]" in err and "Traceback" in err
    assert "in check_shard" in err and "RuntimeError: shard 1 is corrupt" in err


def test_a_rank_whose_process_dies_is_retried_once_then_fails_naming_its_rank(ray_local, tmp_path):
    starts = tmp_path / "starts.txt"
    with pytest.raises(ActorDiedError, match=r"rank 1: the emulation process died, was restarted once and died again"):
        maya.emulate(SCRIPTS / "rank_dies.py", [str(starts)], nproc_per_node=2, trace_dir=tmp_path / "t")
    assert sorted(starts.read_text().split()) == ["0", "1", "1"]  # rank 1 started twice


def test_a_world_the_mesh_cannot_divide_fails_with_the_scripts_own_error(ray_local, tmp_path):
    s = maya.emulate(GPT, [*TINY, "--tp", "4"], nproc_per_node=6, trace_dir=tmp_path / "t")
    assert s.exit_code == 1
    assert s.error.startswith("[rank 0] Traceback")
    assert "ValueError: world_size=6 is not divisible by tp=4 * pp=1" in s.error


def test_tp_pp_dp_mix_at_64_emulates_a_handful_of_ranks(ray_local, tmp_path):
    # Mesh (pp 2, dp 16, tp 2): classes are the 2 pipeline stages; rank 0, probes 1 (tp), 30 (dp) and
    # 32 (pp, also stage 1's representative) are all that run.
    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2"]
    s = maya.emulate(GPT, args, nnodes=8, nproc_per_node=8, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    assert s.world_size == 64 and s.emulated_ranks == [0, 32]
    assert [c["ranks"] for c in s.extra["rank_classes"]] == [32, 32]
    assert sorted(s.extra["emulation_s"], key=int) == ["0", "1", "30", "32"]
    assert len(s.iterations) == 2 and all(it.time_ms > 0 for it in s.iterations)
    # Each data-parallel group of stage 0 holds 16 ranks: FSDP2 reduce-scatters over 16 ranks.
    scatters = _collectives(s.trace_dir, 0, "reduce_scatter")
    assert scatters and all(len(r["group_ranks"]) == 16 for r in scatters)


def test_reused_worker_processes_record_the_same_traces(ray_local, tmp_path):
    # Rank emulations are Ray tasks on reused workers. A world emulated again, after another script
    # ran on the same workers, records the same trace rows, and some rank ran on a worker that had
    # emulated before (the warm start the tuner relies on).
    from maya.world import emulate_world

    args = [*TINY, "--tp", "2", "--dp", "fsdp", "--steps", "1"]
    first = emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2)
    other = emulate_world(SCRIPTS / "ddp_buckets.py", [], gpu="h100", world_size=2, local_world_size=2)
    again = emulate_world(GPT, args, gpu="h100", world_size=2, local_world_size=2)
    assert sorted(first.results) == sorted(again.results)
    for rank in first.results:
        assert first.results[rank].table.equals(again.results[rank].table), f"rank {rank} differs on a reused worker"
    earlier = {r.pid for r in first.results.values()} | {r.pid for r in other.results.values()}
    assert earlier & {r.pid for r in again.results.values()}


def test_in_process_world_matches_the_ray_one(ray_local, tmp_path):
    # What a tuning trial does: the same rank classes, emulated one after another in this process,
    # and the same traces and prediction as through Ray tasks and a Ray Dataset.
    args = [*TINY, "--tp", "2", "--pp", "2", "--dp", "fsdp", "--steps", "1", "--accum", "2"]
    via_ray = maya.emulate(GPT, args, nproc_per_node=8, trace_dir=tmp_path / "ray")
    here = maya.emulate(GPT, args, nproc_per_node=8, trace_dir=tmp_path / "here", in_process=True)
    assert via_ray.exit_code == 0 and here.exit_code == 0, here.error
    assert here.emulated_ranks == via_ray.emulated_ranks and here.extra["rank_classes"] == via_ray.extra["rank_classes"]
    for rank in here.emulated_ranks:
        assert read_rank_trace(tmp_path / "here", rank).equals(read_rank_trace(tmp_path / "ray", rank))
    assert [it.time_ms for it in here.iterations] == [it.time_ms for it in via_ray.iterations]


def test_a_run_into_an_earlier_runs_trace_dir_replaces_its_trace(ray_local, tmp_path):
    # Ray Data writes each rank's partition under a new file name: without clearing, the second run's
    # files joined the first's and `maya simulate` read every iteration twice. A run that then fails
    # leaves the directory incomplete, not looking like the earlier run's.
    trace_dir = tmp_path / "t"
    args = [*TINY, "--dp", "ddp"]
    maya.emulate(GPT, args, nproc_per_node=2, trace_dir=trace_dir)
    again = maya.emulate(GPT, args, nproc_per_node=2, trace_dir=trace_dir)
    assert again.exit_code == 0, again.error
    assert len(list((trace_dir / "rank=0").glob("*.parquet"))) == 1
    resimulated = maya.simulate_trace_dir(trace_dir)
    assert [it.time_ms for it in resimulated.iterations] == pytest.approx([it.time_ms for it in again.iterations])
    (trace_dir / "notes.txt").write_text("the user's own file")
    failed = maya.emulate(SCRIPTS / "fails.py", trace_dir=trace_dir)
    assert failed.exit_code != 0
    with pytest.raises(IncompleteTraceError):
        read_meta(trace_dir)
    assert (trace_dir / "notes.txt").read_text() == "the user's own file"


def test_a_module_entry_point_runs_on_every_rank_through_ray(ray_local, tmp_path):
    # `torchrun --nproc-per-node 2 -m module_entry.train`: the Ray workers find the package from the
    # caller's directory, whatever their own working directory is (its relative import resolves).
    from maya.emulator.runner import ScriptModule

    entry = ScriptModule(name="module_entry.train", directory=str(SCRIPTS))
    s = maya.emulate(entry, ["--steps", "2"], nproc_per_node=2, trace_dir=tmp_path / "t", dedup=False)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 1] and len(s.iterations) == 2
    assert any(row["op"] == "nccl:all_reduce" for row in read_rank_trace(tmp_path / "t", 1).to_pylist())


def test_example_defaults_take_the_layout_the_flags_ask_for(tmp_path):
    # The brief's command shape, `train_gpt.py --tp T --pp P` without --dp or --accum: FSDP2 (DDP cannot
    # hold tensor-parallel parameters) and P micro-batches (the fewest 1F1B takes), the same traces as
    # those flags given.
    layout = [*TINY, "--tp", "2", "--pp", "2", "--steps", "1"]
    implied = maya.emulate(GPT, layout, nproc_per_node=8, trace_dir=tmp_path / "implied", in_process=True)
    given = maya.emulate(GPT, [*layout, "--dp", "fsdp", "--accum", "2"], nproc_per_node=8,
                         trace_dir=tmp_path / "given", in_process=True)
    assert implied.exit_code == 0, implied.error
    assert implied.emulated_ranks == given.emulated_ranks
    for rank in implied.emulated_ranks:
        assert read_rank_trace(tmp_path / "implied", rank).equals(read_rank_trace(tmp_path / "given", rank))
    ops = read_rank_trace(tmp_path / "implied", 0).column("op").to_pylist()
    assert "nccl:reduce_scatter" in ops


def test_host_profile_prices_a_multi_rank_prediction(tmp_path, slow_host_profile):
    """`maya.emulate(..., host_profile=...)` with several ranks: the user's host figures (three times
    the shipped ones) reach the whole job's prediction; in-process, as a tuning trial runs it."""
    args = [*TINY, "--dp", "ddp"]
    shipped = maya.emulate(GPT, args, nproc_per_node=2, trace_dir=tmp_path / "a", in_process=True)
    slow = maya.emulate(GPT, args, nproc_per_node=2, trace_dir=tmp_path / "b", in_process=True,
                        host_profile=slow_host_profile)
    assert shipped.exit_code == 0 and slow.exit_code == 0, (shipped.error, slow.error)
    # The steady step: the first also pays cuBLAS's and cuDNN's first runs of each shape, figures a
    # `maya profile --families host` output does not carry (they stay the shipped ones).
    assert slow.world_size == 2 and slow.iterations[-1].time_ms > 1.5 * shipped.iterations[-1].time_ms


def test_accelerate_ranks_emulated_one_after_another_in_one_process(tmp_path):
    # accelerate keeps its distributed state in class-wide dicts: left over from rank 0, rank 1 found
    # its process group "initialized", made none, and DDP failed for want of a default group.
    s = maya.emulate(SCRIPTS / "accelerate_ddp.py", [str(tmp_path / "state")], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 1] and len(s.iterations) == 2  # 4 micro-batches per rank, 2 per step
    assert all(it.time_ms > 0 for it in s.iterations)
    assert _collectives(tmp_path / "t", 1, "all_reduce")  # DDP's gradient all-reduce on rank 1 too


@pytest.mark.parametrize("stage, precision, optimizer", [(1, "bf16", "client"), (2, "bf16", "fused"), (3, "fp16", "fused")])
def test_deepspeed_zero_steps_on_both_ranks(tmp_path, stage, precision, optimizer):
    # DeepSpeed compiles FusedAdam on first use (under emulation: Maya's stand-in, PyTorch's fused
    # AdamW op); its overflow check reads "no NaN or infinity" through an all-reduce MAX, so no step
    # is skipped; ZeRO-3's rank-agreement broadcasts pass; a PyTorch optimizer built before
    # `initialize` moves the model steps the moved parameters; rank 1, emulated after rank 0 in the
    # same process, finds none of rank 0's process groups left in DeepSpeed's globals.
    s = maya.emulate(SCRIPTS / "deepspeed_zero.py", [str(stage), precision, optimizer], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert s.emulated_ranks == [0, 1] and len(s.iterations) == 3 and all(it.time_ms > 0 for it in s.iterations)
    for rank in (0, 1):
        rows = read_rank_trace(tmp_path / "t", rank).to_pylist()
        step_ops = {r["op"] for r in rows if r["phase"] == "optimizer" and r["kind"] == "kernel" and r["iteration"] == 2}
        assert ("aten::_fused_adamw_" in step_ops) == (optimizer == "fused"), step_ops
        assert optimizer == "fused" or any(op.startswith("aten::_foreach_") for op in step_ops), step_ops
        assert _collectives(tmp_path / "t", rank, "all_gather", iteration=2)  # updated or gathered parameters


@pytest.mark.parametrize("stage", [2, 3])
def test_huggingface_trainer_with_deepspeed_steps_on_both_ranks(tmp_path, stage):
    # accelerate's DummyOptim holds the model's parameters from before DeepSpeed moves the model: the
    # optimizer DeepSpeed builds from it must step the moved ones (ZeRO-2 failed setting a host
    # parameter's data, ZeRO-3 on a host parameter without its partition).
    s = maya.emulate(SCRIPTS / "hf_trainer_deepspeed.py", [str(stage), str(tmp_path / "out")], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 4 and all(it.time_ms > 0 for it in s.iterations)
    rows = read_rank_trace(tmp_path / "t", 1).to_pylist()
    assert any(r["op"] == "aten::_fused_adamw_" and r["iteration"] == 3 for r in rows)


def test_huggingface_trainer_with_fsdp_steps_on_both_ranks(tmp_path):
    # accelerate shards the host-built model with fully_shard, whose own move (`tensor.data =` the GPU
    # copy) failed under emulation. Each GPT2Block (width 128) is gathered in bf16 for forward and again
    # for backward, and its gradients reduce-scattered.
    width = 128
    block = 4 * width + (3 * width * width + 3 * width) + (width * width + width) + (4 * width * width + 4 * width) + (
        4 * width * width + width)  # two layer norms, attention's qkv and projection, the MLP
    s = maya.emulate(SCRIPTS / "hf_trainer_fsdp.py", [str(tmp_path / "out")], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    assert len(s.iterations) == 4 and all(it.time_ms > 0 for it in s.iterations)
    for rank in (0, 1):
        gathers = _collectives(tmp_path / "t", rank, "all_gather", iteration=2)
        assert [c["phase"] for c in gathers if c["message_bytes"] == 2 * block] == ["forward"] * 2 + ["backward"] * 2
        scatters = _collectives(tmp_path / "t", rank, "reduce_scatter", iteration=2)
        assert [c["message_bytes"] for c in scatters].count(2 * block) == 2


def test_deepspeed_cpu_offload_is_refused_by_name(tmp_path):
    s = maya.emulate(SCRIPTS / "deepspeed_zero.py", ["2", "bf16", "offload"], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 1 and s.error.startswith(("[rank 0]", "[rank 1]"))
    assert "Maya cannot emulate DeepSpeed's compiled op 'cpu_adam'" in s.error and '"offload_optimizer"' in s.error


def test_deepspeed_pipeline_stage_after_the_first_is_refused_by_name(tmp_path):
    # Stage 1 would read its input shapes from the values stage 0 sends; DeepSpeed's own failure is a
    # bare assertion. Stage 0 (rank 0) runs: the error is rank 1's.
    s = maya.emulate(SCRIPTS / "deepspeed_pipe.py", [], nproc_per_node=2, trace_dir=tmp_path / "t", in_process=True,
                     dedup=False)
    assert s.exit_code == 1 and s.error.startswith("[rank 1]"), s.error
    assert "Maya cannot emulate DeepSpeed's pipeline engine past its first stage" in s.error
    assert "deepspeed.runtime.pipe.engine.PipelineEngine._recv_tensor_meta" in s.error and "stage 1" in s.error


def test_ddp_find_unused_parameters_runs_and_all_reduces_the_used_map(tmp_path):
    # The reducer stages its map of used parameters in pinned host memory and asserts that it is
    # pinned: the emulation's factories asked for pinned memory now count as pinned.
    s = maya.emulate(SCRIPTS / "ddp_find_unused.py", [], nproc_per_node=2, trace_dir=tmp_path / "t", in_process=True,
                     dedup=False)
    assert s.exit_code == 0, s.error
    used_map = [c for c in _collectives(tmp_path / "t", 0, "all_reduce") if c["input_dtypes"] == ["int32"]]
    assert [c["message_bytes"] for c in used_map] == [4 * 4]  # one int32 per parameter tensor


@pytest.mark.parametrize("where", ["all", "zero"])
def test_a_script_failing_after_whole_iterations_still_gets_their_times(tmp_path, where):
    s = maya.emulate(SCRIPTS / "fails_after_steps.py", [where], nproc_per_node=2, trace_dir=tmp_path / "t",
                     in_process=True)
    assert s.exit_code == 1 and s.error.startswith("[rank 0]") and "No space left on device" in s.error
    assert len(s.iterations) == 3 and all(it.time_ms > 0 for it in s.iterations)
    assert "completed before the script failed" in terminal_summary(s)
    # The trace stays incomplete: `maya simulate` refuses a directory without meta.json.
    assert not (tmp_path / "t" / "meta.json").exists()


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_sync_batch_norm_gathers_statistics_and_reduces_gradients(tmp_path, layout):
    # SyncBatchNorm's five ops exist for CUDA only (no meta or CPU kernel); the script had failed in
    # aten::batch_norm_stats. Per step: its statistics are all-gathered (world x (2 x 16 channels + a
    # count), float32) and its gradient sums all-reduced (2 x 16 float32), beside DDP's bucket.
    s = maya.emulate(SCRIPTS / "sync_batch_norm.py", [layout], nproc_per_node=2, trace_dir=tmp_path / "t",
                     in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    rows = [r for r in read_rank_trace(tmp_path / "t", 0).to_pylist() if r["iteration"] == 1]
    ops = [r["op"] for r in rows if r["kind"] == "kernel"]
    for op in ("batch_norm_stats", "batch_norm_gather_stats_with_counts", "batch_norm_elemt",
               "batch_norm_backward_reduce", "batch_norm_backward_elemt"):
        assert ops.count(f"aten::{op}") == 1, op
    gathers = [r["message_bytes"] for r in rows if r["op"] == "nccl:all_gather" and r["phase"] == "forward"]
    assert gathers == [2 * (2 * 16 + 1) * 4]
    reduces = [r["message_bytes"] for r in rows if r["op"] == "nccl:all_reduce" and r["phase"] == "backward"]
    assert 2 * 16 * 4 in reduces
    elemt = next(r for r in rows if r["op"] == "aten::batch_norm_elemt")
    strides = elemt["output_strides"][0]
    assert (strides[1] == 1) == (layout == "channels_last")  # the input's memory format kept


def test_zero_redundancy_optimizer_steps_and_its_consolidation_is_refused_by_name(tmp_path):
    # Each rank updates its shard of the parameters and broadcasts them to the other; gathering the
    # optimizer state on rank 0 would unpickle rank 1's state, which rank 0's emulation cannot know
    # (it failed with "invalid load key").
    s = maya.emulate(SCRIPTS / "zero_redundancy.py", [], nproc_per_node=2, trace_dir=tmp_path / "t",
                     in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    for rank in (0, 1):
        roots = {json.loads(r["attrs"])["root"] for r in _collectives(tmp_path / "t", rank, "broadcast")
                 if r["phase"] == "optimizer"}
        assert roots == {0, 1}, roots  # each rank's shard, from its owner
    s = maya.emulate(SCRIPTS / "zero_redundancy.py", ["consolidate"], nproc_per_node=2, trace_dir=tmp_path / "c",
                     in_process=True, dedup=False)
    assert s.exit_code == 1 and s.error.startswith("[rank 0]")
    assert "ZeroRedundancyOptimizer.consolidate_state_dict cannot be emulated on the rank that collects" in s.error
    assert len(s.iterations) == 3 and all(it.time_ms > 0 for it in s.iterations)  # the steps before it are kept


def test_lightning_ddp_trains_on_every_rank(tmp_path):
    # Lightning broadcasts rank 0's SIGTERM flag before every batch; rank 1 read the unknown value as 1
    # and left training after the sanity check, so the ranks' collectives could not match.
    s = maya.emulate(SCRIPTS / "lightning_fit.py", [str(tmp_path / "root"), "ddp"], nproc_per_node=2,
                     trace_dir=tmp_path / "t", in_process=True, dedup=False)
    assert s.exit_code == 0, s.error
    for rank in (0, 1):
        rows = read_rank_trace(tmp_path / "t", rank).to_pylist()
        assert sum(r["kind"] == "iteration_end" for r in rows) == 5, rank
        assert sum(r["op"] == "nccl:broadcast" and r["message_bytes"] == 8 and r["phase"] != "other"
                   for r in rows) >= 5  # the flag, recorded each step
