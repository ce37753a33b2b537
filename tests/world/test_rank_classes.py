"""Rank classes from hand-built group tables: families, informative families, probes, classes, fingerprints.

The tables are the ones c10d and init_device_mesh create, in creation order: the world group
first, then one group per mesh slice, dimension by dimension.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import torch

from maya.world.rank_classes import (
    _FINGERPRINT_COLUMNS,
    alike,
    classes,
    families,
    first_difference,
    informative,
    normalized_rows,
    probe_rank,
    trace_fingerprint,
)

GPT = Path(__file__).parents[2] / "examples" / "train_gpt.py"


def mesh_groups(shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """The group table after `init_process_group` and `init_device_mesh("cuda", shape)`, built by hand.

    Ranks fill the mesh in row-major order. Dimension by dimension, DeviceMesh creates one group per
    slice along that dimension, the slices in row-major order of the other coordinates; a dimension
    as large as the world reuses the world group. c10d names groups 0, 1, 2, ... in creation order.
    """
    world = math.prod(shape)
    mesh = torch.arange(world).view(shape)
    groups = [("0", tuple(range(world)))]
    for dim, size in enumerate(shape):
        if size == world:
            continue
        for row in mesh.movedim(dim, -1).reshape(-1, size).tolist():
            groups.append((str(len(groups)), tuple(row)))
    return groups


PP_DP_TP = mesh_groups((2, 2, 2))  # rank = 4 * pp + 2 * dp + tp


def test_mesh_groups_helper_matches_the_groups_an_emulated_rank_records(emulate_rank_isolated):
    assert mesh_groups((2, 2)) == [("0", (0, 1, 2, 3)), ("1", (0, 2)), ("2", (1, 3)), ("3", (0, 1)), ("4", (2, 3))]
    # examples/train_gpt.py builds a ("pp", "dp", "tp") mesh right after init_process_group.
    args = ["--tp", "2", "--pp", "2", "--dp", "fsdp", "--accum", "2", "--layers", "2", "--dim", "64", "--heads", "4",
            "--seq", "64", "--vocab", "512", "--batch", "2", "--steps", "1"]
    rank0 = emulate_rank_isolated(GPT, args, rank=0, world_size=8)
    assert rank0.exit_code == 0, rank0.error
    assert rank0.groups == PP_DP_TP


def test_families_split_a_3d_mesh_into_world_and_one_family_per_dimension():
    fams = families(PP_DP_TP, 8)
    assert [f.index for f in fams] == [0, 1, 2, 3]
    assert [[ranks for _, ranks in f.groups] for f in fams] == [
        [(0, 1, 2, 3, 4, 5, 6, 7)],
        [(0, 4), (1, 5), (2, 6), (3, 7)],  # pp
        [(0, 2), (1, 3), (4, 6), (5, 7)],  # dp
        [(0, 1), (2, 3), (4, 5), (6, 7)],  # tp
    ]
    pp, dp, tp = fams[1:]
    assert (pp.position(6), dp.position(6), tp.position(6)) == (1, 1, 0)  # rank 6 = (pp 1, dp 1, tp 0)
    assert pp.group_of(6) == (2, 6)


def test_families_count_a_repeated_group_name_once():
    doubled = [PP_DP_TP[0], *PP_DP_TP]
    assert families(doubled, 8) == families(PP_DP_TP, 8)


def test_families_start_anew_when_a_group_overlaps_or_changes_size():
    table = [("0", (0, 1, 2, 3)), ("1", (0, 1)), ("2", (0, 1, 2)), ("3", (1, 2)), ("4", (3, 0))]
    assert [[ranks for _, ranks in f.groups] for f in families(table, 4)] == [
        [(0, 1, 2, 3)], [(0, 1)], [(0, 1, 2)], [(1, 2), (3, 0)],
    ]


def test_informative_drops_the_world_beside_a_full_mesh_and_size_one_families():
    fams = families(PP_DP_TP, 8)
    assert [f.index for f in informative(fams, 8)] == [1, 2, 3]
    # A (1, 8, 1) mesh (train_gpt's DDP): only the world family can tell ranks apart.
    ddp = families(mesh_groups((1, 8, 1)), 8)
    # world (also the dp dimension), the pp singletons; tp's singletons are their twins
    assert [f.group_size for f in ddp] == [8, 1]
    assert [ranks for _, ranks in ddp[1].twins] == [(r,) for r in range(8)]
    assert informative(ddp, 8) == [ddp[0]]


def test_informative_keeps_the_world_when_the_other_families_leave_ranks_alike():
    fams = families([("0", (0, 1, 2, 3)), ("1", (0, 1)), ("2", (2, 3))], 4)
    # Positions in {0,1},{2,3} leave ranks 0 and 2 alike, so the world family stays; the world's
    # positions single out every rank, so the pair family adds nothing and goes.
    assert [f.index for f in informative(fams, 4)] == [0]


def megatron_groups() -> list[tuple[str, tuple[int, ...]]]:
    """A group table in the order Megatron-LM's `initialize_model_parallel` creates it for TP 2 x DP 2 x PP 2
    (rank = tp + 2 * dp + 4 * pp), shortened: each data-parallel group with its Gloo twin, the
    tensor-parallel groups, each pipeline group followed by its embedding group (the same ranks) and
    position-embedding group (the first stage alone), then the model-parallel groups (tensor x pipeline)."""
    table = [(0, 1, 2, 3, 4, 5, 6, 7)]
    for tp in range(2):
        for pp in range(2):
            ranks = tuple(tp + 2 * dp + 4 * pp for dp in range(2))
            table += [ranks, ranks]
    table += [(0, 1), (2, 3), (4, 5), (6, 7)]
    for start in range(4):
        table += [(start, start + 4), (start, start + 4), (start,)]
    table += [(0, 1, 4, 5), (2, 3, 6, 7)]
    return [(str(i), ranks) for i, ranks in enumerate(table)]


def test_families_take_gloo_twins_and_groups_created_in_between():
    fams = families(megatron_groups(), 8)
    assert [[ranks for _, ranks in f.groups] for f in fams] == [
        [(0, 1, 2, 3, 4, 5, 6, 7)],
        [(0, 2), (4, 6), (1, 3), (5, 7)],  # dp, each Gloo twin left out
        [(0, 1), (2, 3), (4, 5), (6, 7)],  # tp
        [(0, 4), (1, 5), (2, 6), (3, 7)],  # pp, the embedding and position-embedding groups between them
        [(0,), (1,), (2,), (3,)],  # position embedding
        [(0, 1, 4, 5), (2, 3, 6, 7)],  # model parallel
    ]
    assert [ranks for _, ranks in fams[1].twins] == [(0, 2), (4, 6), (1, 3), (5, 7)]
    assert [ranks for _, ranks in fams[3].twins] == [(0, 4), (1, 5), (2, 6), (3, 7)]


def test_informative_drops_wide_families_that_narrow_ones_determine():
    fams = families(megatron_groups(), 8)
    # The world and model-parallel families are combinations of dp, tp and pp; dropping the narrow
    # ones instead (the world's positions single out every rank) would make every rank its own class.
    assert [f.index for f in informative(fams, 8)] == [1, 2, 3]
    dp, tp, pp = informative(fams, 8)
    assert classes(8, [pp]) == {r: 4 * (r >= 4) for r in range(8)}


def test_a_twin_group_counts_as_its_family_in_the_fingerprint():
    fams = families(megatron_groups(), 8)
    rows = []
    for name in ("1", "2"):  # rank 0's data-parallel group and its Gloo twin
        rows.append({c: None for c in _FINGERPRINT_COLUMNS} | {
            "iteration": 0, "kind": "collective", "op": "all_reduce", "group_name": name,
            "group_ranks": [0, 2], "peer": None})
    normalized = normalized_rows(pa.Table.from_pylist(rows), 0, fams)
    assert normalized[0] == normalized[1]
    assert normalized[0][-3:] == (1, 2, None)  # family 1 (dp), group size 2, no peer


def test_probe_differs_from_rank_0_in_one_family_only():
    pp, dp, tp = informative(families(PP_DP_TP, 8), 8)
    assert probe_rank(pp, [dp, tp], 8) == 4
    assert probe_rank(dp, [pp, tp], 8) == 2
    assert probe_rank(tp, [pp, dp], 8) == 1


def test_probe_takes_the_last_position_of_a_wide_group():
    dp, tp = informative(families(mesh_groups((2, 4)), 8), 8)  # rank = 4 * dp + tp
    assert probe_rank(tp, [dp], 8) == 3  # tp position 3, dp position 0 like rank 0
    assert probe_rank(dp, [tp], 8) == 4


def test_probe_is_none_when_rank_0_is_in_no_group_of_the_family():
    fam = families([("0", (0, 1, 2, 3)), ("1", (2, 3))], 4)[1]
    assert probe_rank(fam, [], 4) is None


def test_classes_of_a_pipeline_only_variant_are_the_stages():
    pp, dp, tp = informative(families(PP_DP_TP, 8), 8)
    assert classes(8, [pp]) == {0: 0, 1: 0, 2: 0, 3: 0, 4: 4, 5: 4, 6: 4, 7: 4}


def test_classes_combine_every_variant_family():
    pp, dp, tp = informative(families(PP_DP_TP, 8), 8)
    assert classes(8, [pp, tp]) == {0: 0, 1: 1, 2: 0, 3: 1, 4: 4, 5: 5, 6: 4, 7: 5}
    assert classes(8, []) == dict.fromkeys(range(8), 0)
    assert classes(8, [pp, dp, tp]) == {r: r for r in range(8)}


def test_ranks_outside_a_partial_family_form_their_own_class():
    fam = families([("0", (0, 1, 2, 3)), ("1", (2, 3))], 4)[1]
    assert classes(4, [fam]) == {0: 0, 1: 0, 2: 2, 3: 3}


# -- fingerprints ------------------------------------------------------------------------------------


def _trace(rows: list[dict]) -> pa.Table:
    """A trace with the columns the fingerprint reads; missing values are null."""
    columns = (*_FINGERPRINT_COLUMNS, "group_name", "group_ranks", "peer")
    return pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])


def _kernel(op: str) -> dict:
    return {"kind": "kernel", "op": op, "phase": "forward", "stream": 0, "event_id": -1, "iteration": 0}


def _collective(op: str, group: str, ranks: list[int], size: int, peer: int | None = None) -> dict:
    return {"kind": "collective", "op": op, "phase": "backward", "stream": 1, "event_id": -1, "iteration": 0,
            "group_name": group, "group_ranks": ranks, "message_bytes": size, "peer": peer}


def test_data_parallel_peers_have_one_fingerprint_across_their_groups():
    fams = families(PP_DP_TP, 8)
    # Ranks 0 and 1 all-reduce over their own dp groups ("5" = (0, 2), "6" = (1, 3)); rank 0 also logs.
    rank0 = _trace([_kernel("aten::mm"), _collective("nccl:all_reduce", "5", [0, 2], 4096),
                    {"kind": "sync", "op": "cuda:item", "phase": "forward", "stream": 0, "event_id": -1, "iteration": 0}])
    rank1 = _trace([_kernel("aten::mm"), _collective("nccl:all_reduce", "6", [1, 3], 4096)])
    assert trace_fingerprint(rank0, 0, fams) == trace_fingerprint(rank1, 1, fams)


def test_fingerprints_differ_by_size_and_by_relative_peer():
    fams = families(PP_DP_TP, 8)
    base = _trace([_collective("nccl:all_reduce", "5", [0, 2], 4096)])
    bigger = _trace([_collective("nccl:all_reduce", "6", [1, 3], 8192)])
    assert trace_fingerprint(base, 0, fams) != trace_fingerprint(bigger, 1, fams)
    assert "message_bytes: 4096 vs 8192" in first_difference(base, 0, bigger, 1, fams)
    # First stage sends forward (peer +1 in the pp group), last stage sends backward (peer -1).
    first = _trace([_collective("nccl:send", "1", [0, 4], 64, peer=4)])
    last = _trace([_collective("nccl:send", "1", [0, 4], 64, peer=0)])
    assert trace_fingerprint(first, 0, fams) != trace_fingerprint(last, 4, fams)
    assert "relative_peer: 1 vs -1" in first_difference(first, 0, last, 4, fams)


def test_first_difference_reports_unequal_lengths():
    fams = families(PP_DP_TP, 8)
    one, two = _trace([_kernel("aten::mm")]), _trace([_kernel("aten::mm"), _kernel("aten::add.Tensor")])
    assert first_difference(one, 0, two, 4, fams).startswith("rank 0 records 1 rows, rank 4 records 2")


def test_alike_compares_collectives_exactly_and_totals_within_tolerance():
    fams = families([("0", (0, 1))], 2)
    base = {c: None for c in _FINGERPRINT_COLUMNS} | {"group_name": None, "group_ranks": None, "peer": None}

    def trace(*rows):
        return pa.Table.from_pylist([base | row for row in rows])

    def kernel(shape, flops, nbytes, allocated=1000):
        return {"iteration": 0, "kind": "kernel", "op": "aten::add_.Tensor", "input_shapes": [shape],
                "flops": flops, "bytes": nbytes, "allocated_bytes": allocated}

    reduce = {"iteration": 0, "kind": "collective", "op": "nccl:all_reduce", "message_bytes": 4096,
              "group_name": "0", "group_ranks": [0, 1], "allocated_bytes": 1000}
    a = trace(kernel([100], 100, 1200), kernel([300], 300, 3600), reduce)
    assert alike(a, 0, trace(kernel([400], 400, 4800), reduce), 1, fams, kernel_tolerance=0.5) == (
        "FLOPs 0.00%, bytes 0.00%, peak memory 0.00%, kernels 50.00%")
    assert alike(a, 0, trace(kernel([400], 400, 4800), reduce), 1, fams) is None  # one kernel of two: over 2%
    assert alike(a, 0, trace(kernel([100], 100, 1200), kernel([300], 301, 3600), reduce), 1, fams) is not None
    assert alike(a, 0, trace(kernel([100], 100, 1200), kernel([300], 310, 3600), reduce), 1, fams) is None
    assert alike(a, 0, trace(kernel([100], 100, 1200), kernel([300], 300, 3600, 1010), reduce), 1, fams) is None
    assert alike(a, 0, trace(kernel([100], 100, 1200), kernel([300], 300, 3600), reduce | {"message_bytes": 4100}),
                 1, fams) is None
    # A host-to-device copy of other bytes (a batch of another size) is more than a shape.
    copy = {"iteration": 0, "kind": "memcpy", "op": "aten::_to_copy", "bytes": 2000, "allocated_bytes": 1000}
    b = trace(kernel([100], 100, 1200), kernel([300], 300, 3600), reduce, copy)
    assert alike(a, 0, b, 1, fams) is None  # a copy the other has not
    assert alike(b, 0, trace(kernel([400], 400, 4800), reduce, copy), 1, fams, kernel_tolerance=0.5) is not None
    assert alike(b, 0, trace(kernel([100], 100, 1200), kernel([300], 300, 3600), reduce, copy | {"bytes": 2500}),
                 1, fams) is None
