"""The GPU profiler, exercised on the CPU: quick grids, trace signatures, host overhead, CLI."""

import json
import math
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from maya.emulator.op_cost import op_cost
from maya.estimator.families import family_of
from maya.estimator.host_overhead import (
    MODULE_DEPTH,
    _count_ops,
    _linear_relu_stack,
    _training_step,
    backward_costs_us,
    first_plausible_line,
    measure_host_overhead,
)
from maya.estimator.profile_grid import CUDA_ONLY_OPS, FAMILIES, grid, make_case
from maya.estimator.profiler import PROFILE_SCHEMA, main, read_trace_signatures, run_profile
from maya.estimator.replay import TensorSpec, build_replay
from maya.trace import TRACE_SCHEMA, write_meta, write_rank_trace

TRACE_COLUMNS = ["op", "input_shapes", "input_dtypes", "input_strides", "output_shapes", "output_dtypes",
                 "output_strides", "attrs", "flops", "bytes"]  # fmt: skip
MEASUREMENT_COLUMNS = ["family", "duration_us", "duration_us_p10", "duration_us_p90", "reps", "allow_tf32",
                       "sleep_before", "gpu_name", "torch_version", "cuda_version", "cudnn_version", "date", "host"]  # fmt: skip


@pytest.fixture(scope="module")
def quick_profile(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile")
    run_profile(out, families=["gemm", "sdpa", "elementwise", "foreach"], device="cpu", quick=True)
    return out


def test_quick_profile_writes_documented_columns(quick_profile):
    for family in ("gemm", "sdpa", "elementwise", "foreach"):
        table = pq.read_table(quick_profile / f"{family}.parquet")
        assert table.column_names == TRACE_COLUMNS + MEASUREMENT_COLUMNS
        assert table.schema.equals(PROFILE_SCHEMA)
        rows = table.to_pylist()
        assert rows, family
        for row in rows:
            assert row["family"] == family
            assert row["duration_us"] > 0
            assert row["duration_us_p10"] <= row["duration_us"] <= row["duration_us_p90"]
            assert row["reps"] == 3
            assert row["gpu_name"].startswith("cpu")


def test_generation_token_ops_are_timed_with_a_nonzero_integer_divisor(quick_profile):
    # Beam search's `indices // vocab` and the end-of-sequence `isin` joined the elementwise grid; an
    # integer floor_divide by the zeros integer tensors are otherwise filled with would raise.
    rows = pq.read_table(quick_profile / "elementwise.parquet").to_pylist()
    timed = {(row["op"], row["input_shapes"][0][0]) for row in rows if row["input_dtypes"][:1] == ["int64"]}
    assert timed >= {("aten::floor_divide", 1000), ("aten::isin.Tensor_Tensor", 1000)}


def test_gemm_rows_carry_op_cost_and_layouts(quick_profile):
    rows = pq.read_table(quick_profile / "gemm.parquet").to_pylist()
    addmm = next(r for r in rows if r["op"] == "aten::addmm")
    # F.linear(x[64, 32], W[48, 32], b): bias, x, W.t() with strides (1, 32)
    assert addmm["input_shapes"] == [[48], [64, 32], [32, 48]]
    assert addmm["input_strides"] == [[1], [32, 1], [1, 32]]
    assert addmm["output_shapes"] == [[64, 48]]
    assert addmm["flops"] == 2 * 64 * 48 * 32 + 64 * 48
    assert json.loads(addmm["attrs"]) == {"args": [{"$t": 0}, {"$t": 1}, {"$t": 2}], "kwargs": {}}
    expected = op_cost(addmm["op"], addmm["input_shapes"], addmm["input_dtypes"], addmm["output_shapes"],
                       addmm["output_dtypes"], json.loads(addmm["attrs"]))  # fmt: skip
    assert (addmm["flops"], addmm["bytes"]) == expected


def test_cuda_only_ops_skipped_on_cpu(quick_profile):
    ops = set(pq.read_table(quick_profile / "sdpa.parquet").column("op").to_pylist())
    assert ops == {
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    }
    assert not ops & CUDA_ONLY_OPS


def test_every_family_has_a_quick_grid_and_a_full_grid_within_budget():
    total = 0
    for family in FAMILIES:
        assert grid(family, quick=True), family
        total += len(grid(family))
    # 9,856 signatures took 229 s on an H200 (benchmarks/gpu/profile_h200.log); the norm grid's 480
    # CNN batch- and group-norm cases 7 s more (benchmarks/gpu/session22_h200/s22a/jobs.txt), the pool
    # grid's 464 resampling cases 5.3 s more (benchmarks/gpu/session36/s36r/run1.log).
    assert 5000 <= total <= 12000


def _signature(case):
    return case.op, case.input_shapes, case.input_strides, case.input_dtypes, json.dumps(case.attrs, default=str)


@pytest.mark.parametrize("family", FAMILIES)
def test_random_draws_are_off_the_grid_seeded_and_replay(family):
    fixed = {_signature(c) for c in grid(family, part="fixed")}
    drawn = grid(family, part="random", seed=1)
    assert drawn == grid(family, part="random", seed=1)  # deterministic
    assert len(grid(family)) == len(grid(family, part="fixed")) + len(grid(family, part="random"))
    signatures = {_signature(c) for c in drawn}
    other_seed = {_signature(c) for c in grid(family, part="random", seed=2)}
    assert len(signatures - fixed) >= 0.9 * len(signatures)
    assert len(signatures & other_seed) <= 0.1 * len(signatures)  # tiny memory-bound shapes can coincide
    # The smallest draw of each op runs on the CPU (CUDA-only ops are timed on the GPU only).
    by_op = {}
    for case in sorted(drawn, key=lambda c: sum(math.prod(s) for s in c.input_shapes)):
        by_op.setdefault(case.op, case)
    for case in by_op.values():
        if case.op in CUDA_ONLY_OPS or "bfloat16" in case.input_dtypes and case.op.endswith("layer_norm_backward"):
            continue  # the CPU layer-norm backward wants bf16 statistics; CUDA takes fp32 ones
        build_replay(case.op, case.input_shapes, case.input_dtypes, case.input_strides, case.attrs, device="cpu")()


def test_random_batch_norm_draws_time_the_native_backward_that_amp_runs():
    # A bfloat16 batch norm (an AMP ResNet's) runs PyTorch's native kernels, backward included.
    drawn = [c for c in grid("norm", part="random", seed=3) if "batch_norm" in c.op]
    forward = [c for c in drawn if c.op == "aten::native_batch_norm"]
    backward = [c for c in drawn if c.op == "aten::native_batch_norm_backward"]
    assert forward and [c.input_shapes[0] for c in backward] == [c.input_shapes[0] for c in forward]
    assert [c.input_strides[:2] for c in backward] == [c.input_strides[:1] * 2 for c in forward]
    assert {c.input_dtypes[0] for c in backward} == {"bfloat16", "float32"}


def test_grid_refuses_an_unknown_part():
    with pytest.raises(ValueError, match="part must be"):
        grid("gemm", part="everything")


def test_make_case_drops_defaulted_arguments_like_the_dispatcher():
    q = TensorSpec(shape=(1, 2, 8, 4), dtype="bfloat16")
    case = make_case("sdpa", "aten::_scaled_dot_product_flash_attention", [q, q, q, 0.0, False, False], {"scale": None})
    assert case.attrs == {"args": [{"$t": 0}, {"$t": 1}, {"$t": 2}], "kwargs": {}}
    causal = make_case("sdpa", "aten::_scaled_dot_product_flash_attention", [q, q, q, 0.0, True, False])
    assert causal.attrs["args"][3:] == [0.0, True]


def _trace_row(seq, kind, op, shapes=(), dtypes=(), attrs=None):
    return {
        "seq": seq, "iteration": 0, "kind": kind, "op": op, "phase": "forward", "module": "", "stream": 0,
        "event_id": -1, "input_shapes": [list(s) for s in shapes], "input_dtypes": list(dtypes),
        "input_strides": [], "output_shapes": [], "output_dtypes": [], "output_strides": [],
        "attrs": json.dumps(attrs) if attrs is not None else None, "flops": 1.0, "bytes": 1,
        "allocated_bytes": 0, "reserved_bytes": 0,
    }  # fmt: skip


def test_trace_mode_times_distinct_kernels_and_skips_failures(tmp_path, caplog):
    mm = dict(shapes=[[16, 8], [8, 4]], dtypes=["float32"] * 2, attrs={"args": [{"$t": 0}, {"$t": 1}], "kwargs": {}})
    rows = [
        _trace_row(0, "kernel", "aten::mm", **mm),
        _trace_row(1, "kernel", "aten::mm", **mm),  # duplicate signature
        _trace_row(2, "sync", "cuda:synchronize"),
        _trace_row(3, "kernel", "aten::definitely_not_an_op", [[4]], ["float32"], {"args": [{"$t": 0}]}),
    ]
    trace_dir = tmp_path / "trace"
    write_rank_trace(trace_dir, 0, pa.Table.from_pylist(rows, schema=TRACE_SCHEMA))
    write_meta(trace_dir, {"world_size": 1})
    assert len(read_trace_signatures(trace_dir)) == 2

    out = run_profile(tmp_path / "out", device="cpu", quick=True, trace_dir=trace_dir)
    exact = pq.read_table(out / "exact.parquet").to_pylist()
    assert [r["op"] for r in exact] == ["aten::mm"]
    assert exact[0]["family"] == "exact"
    assert exact[0]["input_shapes"] == [[16, 8], [8, 4]]
    assert exact[0]["output_shapes"] == [[16, 4]]
    assert exact[0]["duration_us"] > 0
    assert "definitely_not_an_op" in caplog.text
    assert not (out / "gemm.parquet").exists()  # a trace run does not run the grids


def test_unknown_family_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown families"):
        run_profile(tmp_path, families=["nope"], device="cpu", quick=True)


def test_host_overhead_on_cpu():
    result = measure_host_overhead("cpu", iterations=200)
    per_op = result["per_op_us"]
    for key in ("aten_op_us", "functional_linear_us", "module_forward_op_us", "autograd_backward_op_us",
                "optimizer_foreach_per_tensor_us", "rnn_cell_forward_us", "rnn_cell_backward_us"):  # fmt: skip
        assert key in per_op
    assert 0 < per_op["aten_op_us"] < 1000
    assert per_op["rnn_cell_forward_us"] > 0 and per_op["rnn_cell_backward_us"] > 0
    assert result["kernel_ops"]["module_forward_op_us"] == 16  # 8 x (addmm, relu)
    assert result["kernel_ops"]["module_forward_grad_op_us"] == 16 and per_op["module_forward_grad_op_us"] > 0
    # 8 x (mm, mm, sum, threshold_backward) - the first layer's input gradient + the loss's ones_like:
    # counted with the gradients unset, as every timed call starts; no AccumulateGrad adds.
    assert result["kernel_ops"]["autograd_backward_op_us"] == 32
    assert per_op["autograd_backward_op_us"] > 0 and "autograd_backward_call_us" in per_op
    assert "module_forward_grad_op_us" in result["method"]
    for layer in ("conv", "batch_norm"):
        for phase in ("forward", "backward"):
            assert 0 <= per_op[f"{layer}_{phase}_extra_us"] < 1e5
    assert "method" in result and "conv_forward_extra_us" in result["method"]
    # A checkpoint region's forward share, measured beside its whole, floored at 0.
    for part in ("region", "per_op"):
        assert per_op[f"checkpoint_forward_{part}_us"] >= 0 and f"checkpoint_{part}_us" in per_op
    assert "checkpoint_forward_region_us" in result["method"]


def test_backward_figure_times_the_ops_it_counts():
    """The backward figure divides the time of repeated calls by the ops one call issues: each timed
    call must issue what the counted one did. A step that keeps its gradients issues an AccumulateGrad
    add per parameter from its second call on (16 more kernels for 8 blocks), which the figure before
    session 35 timed but did not count."""
    model, inp = _linear_relu_stack(MODULE_DEPTH, torch.device("cpu")), torch.randn(1, 16)
    step = _training_step(model, inp, backward=True)
    assert [_count_ops(step) for _ in range(3)] == [49, 49, 49]  # 17 forward (with the loss) + 32 backward

    def keeping_gradients():
        model(inp).sum().backward()

    model.zero_grad(set_to_none=True)  # as a first training step finds them
    assert [_count_ops(keeping_gradients) for _ in range(2)] == [49, 65]
    call_us, op_us, ops = backward_costs_us(torch.device("cpu"), 20, lambda: None)
    assert ops == 32 and op_us > 0 and math.isfinite(call_us)


def test_a_backward_line_with_a_negative_fixed_cost_is_measured_again(caplog):
    lines = iter([(-188.9, 26.7), (120.0, 19.0), (300.0, 18.0)])
    calls = []

    def measure():
        calls.append(1)
        return next(lines)

    assert first_plausible_line(measure, 3) == (120.0, 19.0) and len(calls) == 2
    # None plausible: the least inflated slope, with a warning naming the lines.
    lines = iter([(-5.0, 30.0), (-1.0, 21.0), (-9.0, 25.0)])
    with caplog.at_level("WARNING"):
        assert first_plausible_line(lambda: next(lines), 3) == (-1.0, 21.0)
    assert "negative fixed cost in all 3" in caplog.text


def test_cli_quick_run_writes_host_overhead(tmp_path):
    assert main(["--out", str(tmp_path), "--families", "copy,host", "--quick", "--device", "cpu"]) == 0
    assert (tmp_path / "copy.parquet").exists()
    overhead = json.loads((tmp_path / "host_overhead.json").read_text())
    assert overhead["per_op_us"]["aten_op_us"] > 0


def test_cli_quick_pool_profile_is_its_own_family_file(tmp_path):
    import pyarrow.parquet as pq

    assert main(["--out", str(tmp_path), "--families", "pool", "--quick", "--device", "cpu"]) == 0
    table = pq.read_table(tmp_path / "pool.parquet")
    assert set(table.column("family").to_pylist()) == {"pool"}
    assert {"aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward"} <= set(table.column("op").to_pylist())


def test_help_and_import_without_ray_catboost_yaml():
    blocked = "import sys; [sys.modules.__setitem__(m, None) for m in ('ray', 'catboost', 'yaml', 'tqdm')]; "
    code = blocked + "from maya.estimator.profiler import main; main(['--help'])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--families" in result.stdout and "--trace" in result.stdout


def test_cudnn_benchmark_profile_marks_the_convolution_rows(tmp_path):
    # --cudnn-benchmark times the convolutions autotuned; their rows carry the attrs key the emulator
    # records under torch.backends.cudnn.benchmark, so the two modes never share a signature.
    from maya.emulator.attrs import CUDNN_BENCHMARK

    main(["--out", str(tmp_path), "--families", "conv", "--quick", "--device", "cpu", "--cudnn-benchmark"])
    rows = pq.read_table(tmp_path / "conv.parquet").to_pylist()
    assert rows and {row["op"] for row in rows} == {"aten::convolution", "aten::convolution_backward"}
    assert all(json.loads(row["attrs"])[CUDNN_BENCHMARK] is True for row in rows)
    plain = run_profile(tmp_path / "plain", families=["conv"], device="cpu", quick=True)
    assert not any(CUDNN_BENCHMARK in json.loads(row["attrs"]) for row in pq.read_table(plain / "conv.parquet").to_pylist())


def test_shards_split_a_family_without_overlap(tmp_path):
    for i in range(2):
        main(["--out", str(tmp_path / str(i)), "--families", "copy", "--quick", "--device", "cpu", "--shard", f"{i}/2"])
    whole = run_profile(tmp_path / "all", families=["copy"], device="cpu", quick=True)
    keys = [{(r["op"], json.dumps(r["input_shapes"]), json.dumps(r["input_strides"]), r["input_dtypes"][0])
             for r in pq.read_table(d / "copy.parquet").to_pylist()} for d in (tmp_path / "0", tmp_path / "1", whole)]
    assert keys[0] and keys[1] and not keys[0] & keys[1] and keys[0] | keys[1] == keys[2]
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--shard", "2/2"])


def test_ops_times_only_the_named_ops_and_refuses_one_no_grid_has(tmp_path):
    # GradScaler's two ops joined the foreach grid after it was profiled: --ops times just them.
    scaler = ["aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"]
    main(["--out", str(tmp_path), "--families", "foreach", "--quick", "--device", "cpu", "--ops", ",".join(scaler)])
    rows = pq.read_table(tmp_path / "foreach.parquet").to_pylist()
    assert sorted(row["op"] for row in rows) == scaler
    assert all(row["duration_us"] > 0 for row in rows)
    assert {family_of(op) for op in scaler} == {"foreach"}  # a trace's copies of them sleep as the grid's do
    with pytest.raises(ValueError, match=r"ops \['aten::_amp_update_scale_'\] have no case"):
        run_profile(tmp_path / "gemm", families=["gemm"], device="cpu", quick=True, ops=["aten::_amp_update_scale_"])


def test_no_tf32_times_every_float32_case_with_tf32_off(tmp_path):
    # The grids follow PyTorch's defaults (cuDNN's float32 convolutions with TF32 on); --no-tf32 times
    # them as a script that turns TF32 off runs them, and the rows say so.
    plain = run_profile(tmp_path / "plain", families=["conv"], device="cpu", quick=True)
    assert all(row["allow_tf32"] for row in pq.read_table(plain / "conv.parquet").to_pylist())
    main(["--out", str(tmp_path / "off"), "--families", "conv", "--quick", "--device", "cpu", "--no-tf32"])
    rows = pq.read_table(tmp_path / "off" / "conv.parquet").to_pylist()
    assert rows and not any(row["allow_tf32"] for row in rows)
    assert {row["input_dtypes"][0] for row in rows} == {"float32"}


def test_flip_grad_layout_times_each_convolution_backward_with_the_other_grad_format(tmp_path):
    # ConvNeXt's block permutes to NHWC and back, so its convolutions' backward gets a channels-last
    # grad_output beside an NCHW input: --flip-grad-layout times the grid's backward cases that way.
    plain = pq.read_table(run_profile(tmp_path / "plain", families=["conv"], device="cpu", quick=True) / "conv.parquet")
    main(["--out", str(tmp_path / "flip"), "--families", "conv", "--quick", "--device", "cpu", "--flip-grad-layout"])
    rows = pq.read_table(tmp_path / "flip" / "conv.parquet").to_pylist()
    backward = [row for row in plain.to_pylist() if row["op"] == "aten::convolution_backward"]
    assert rows and len(rows) == len(backward) < plain.num_rows
    for row, before in zip(rows, backward):
        assert row["input_shapes"] == before["input_shapes"] and row["input_strides"][1:] == before["input_strides"][1:]
        n, c, h, w = row["input_shapes"][0]
        nchw, nhwc = [c * h * w, h * w, w, 1], [h * w * c, 1, w * c, c]
        assert {tuple(row["input_strides"][0]), tuple(before["input_strides"][0])} == {tuple(nchw), tuple(nhwc)}
        assert row["duration_us"] > 0


def test_flip_grad_layout_leaves_other_ops_and_layout_free_shapes_out():
    from maya.estimator.profiler import with_flipped_grad_layout

    conv = [c for c in grid("conv", quick=True) if c.op == "aten::convolution_backward"][0]
    assert with_flipped_grad_layout(with_flipped_grad_layout(conv)) == conv  # flipping twice: the grid's case
    assert with_flipped_grad_layout([c for c in grid("conv", quick=True) if c.op == "aten::convolution"][0]) is None
    assert with_flipped_grad_layout(grid("gemm", quick=True)[0]) is None
    one_by_one = make_case("conv", "aten::convolution_backward", [
        TensorSpec(shape=(2, 16, 1, 1), dtype="float32"), TensorSpec(shape=(2, 8, 1, 1), dtype="float32"),
        TensorSpec(shape=(16, 8, 1, 1), dtype="float32"), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False]])
    assert with_flipped_grad_layout(one_by_one) is None  # 1 x 1 images: both formats have the same strides


def test_dtypes_times_only_the_cases_of_those_dtypes(tmp_path):
    # --dtypes extends a profile after a grid gained cases of one dtype, without re-timing the rest.
    main(["--out", str(tmp_path / "bf16"), "--families", "copy", "--quick", "--device", "cpu", "--dtypes", "bfloat16"])
    rows = pq.read_table(tmp_path / "bf16" / "copy.parquet").to_pylist()
    whole = pq.read_table(run_profile(tmp_path / "all", families=["copy"], device="cpu", quick=True) / "copy.parquet")
    assert rows and {row["input_dtypes"][0] for row in rows} == {"bfloat16"}
    assert len(rows) == sum(row["input_dtypes"][0] == "bfloat16" for row in whole.to_pylist()) < whole.num_rows


def test_the_sdpa_grid_times_float32_attention_on_the_memory_efficient_backend():
    # A model trained in float32 runs attention on the memory-efficient backend (flash and cuDNN need
    # 16-bit inputs): the grid covers it, forward and backward, causal and not.
    from maya.estimator.profile_grid import grid

    cases = [c for c in grid("sdpa", part="fixed") if c.input_dtypes[0] == "float32"]
    assert {c.op for c in cases} == {"aten::_scaled_dot_product_efficient_attention",
                                     "aten::_scaled_dot_product_efficient_attention_backward"}
    assert {c.input_shapes[0][2] for c in cases} >= {128, 1024, 8192}


def test_the_gpu_sleep_before_a_launch_bound_op_outlasts_its_launch():
    # An RNN whose one untimed run took 20 ms of wall time sleeps 30 ms (at the H200's 1,980 MHz)
    # before each timed run, so its kernels are all queued before the GPU reaches them; a short op
    # keeps the floor.
    from maya.estimator.profiler import SLEEP_BEFORE_CYCLES, SLEEP_CYCLES_PER_MS, SLEEP_FAMILIES, sleep_cycles

    assert {"rnn", "foreach", "conv"} <= SLEEP_FAMILIES
    assert sleep_cycles(20.0) == int(30.0 * SLEEP_CYCLES_PER_MS)
    assert sleep_cycles(0.01) == SLEEP_BEFORE_CYCLES


def test_trace_signatures_of_launch_bound_families_sleep_like_the_grid():
    from maya.estimator.profile_grid import ProfileCase
    from maya.estimator.profiler import sleeps_before

    def traced(op):
        return ProfileCase(family="exact", op=op, input_shapes=(), input_dtypes=(), input_strides=(), attrs={})

    assert sleeps_before(traced("aten::_cudnn_rnn_backward")) and sleeps_before(traced("aten::_foreach_mul_.Scalar"))
    assert sleeps_before(traced("aten::convolution_backward"))
    assert not sleeps_before(traced("aten::mm"))
    assert all(sleeps_before(case) for case in grid("foreach", quick=True))


@pytest.mark.parametrize("causal", [False, True])
def test_attention_dropout_cases_are_the_signatures_a_model_with_attention_dropout_records(scripts, tmp_path, causal):
    # BERT, GPT-2 and nn.TransformerEncoderLayer train with attention dropout 0.1; the grids time none,
    # so --attention-dropout re-times their attention cases with it, encoded as the emulator records them.
    import maya
    from maya.estimator.profile_grid import _sdpa_cases
    from maya.estimator.profiler import with_attention_dropout
    from maya.estimator.signature import canonical_attrs
    from maya.trace import read_rank_trace

    s = maya.emulate(scripts / "attention_dropout.py", ["--causal"] * causal, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = read_rank_trace(s.trace_dir, 0).to_pandas()
    recorded = {row.op: row for row in ops[ops.op.str.contains("_attention")].itertuples()}
    cases = [with_attention_dropout(c, 0.1) for c in _sdpa_cases("cudnn", 2, 4, 4, 128, 64, causal, "bfloat16")]
    assert [c.op for c in cases] == sorted(recorded, key=len)  # the forward, then its backward
    forward, backward = cases
    row = recorded[forward.op]
    # The marks of how often a shape recurs (new_shape on a first run) are not the op's arguments.
    assert canonical_attrs(row.attrs) == canonical_attrs(json.dumps(forward.attrs))
    assert json.loads(row.attrs).get("new_shape") == "cudnn_attention"  # the first run of this shape
    assert [list(x) for x in row.input_strides] == [list(x) for x in forward.input_strides]
    scalars = [a for a in json.loads(recorded[backward.op].attrs)["args"] if not isinstance(a, dict)]
    assert scalars == [a for a in backward.attrs["args"] if not isinstance(a, dict)]
    assert 0.1 in scalars


def test_attention_dropout_leaves_other_ops_out_and_refuses_a_probability_outside_0_1(tmp_path):
    from maya.estimator.families import SDPA_ARGS
    from maya.estimator.profiler import with_attention_dropout

    sdpa = grid("sdpa", part="fixed")
    for case in sdpa:
        changed, at = with_attention_dropout(case, 0.2), SDPA_ARGS[case.op][2]
        assert changed.attrs["args"][at] == 0.2
        assert changed.attrs["args"][:at] == case.attrs["args"][:at]
        assert changed.attrs["args"][at + 1:] == case.attrs["args"][at + 1:]
    assert with_attention_dropout(grid("gemm", quick=True)[0], 0.1) is None
    cpu = [c for c in grid("sdpa", quick=True) if "for_cpu" in c.op]
    assert cpu and all(with_attention_dropout(c, 0.1) is None for c in cpu)  # the CPU kernel has no dropout
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="attention_dropout"):
            run_profile(tmp_path, families=["sdpa"], device="cpu", quick=True, attention_dropout=bad)


@pytest.mark.parametrize("channels_last", [False, True])
def test_pooling_cases_are_the_signatures_a_cnn_records(scripts, tmp_path, channels_last):
    # ResNet's 3x3 stride-2 max pool ran 3-6x slower on the H200 than the copy model, which had never
    # seen pooling, estimated: the copy grid times pooling as the emulator records it.
    import maya
    from maya.estimator.profile_grid import _pool_cases
    from maya.trace import read_rank_trace

    s = maya.emulate(scripts / "pooling.py", ["--channels-last"] * channels_last, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    ops = read_rank_trace(s.trace_dir, 0).to_pandas()
    recorded = ops[ops.op.str.contains("pool")]
    cases = [*_pool_cases("max", 2, 16, 32, "bfloat16", channels_last, 3, 2, 1),
             *_pool_cases("avg", 2, 16, 32, "bfloat16", channels_last, 2, 2, 0)]
    assert sorted(recorded.op) == sorted(c.op for c in cases)
    for case in cases:
        row = recorded[recorded.op == case.op].iloc[0]
        assert [list(x) for x in row.input_shapes] == [list(x) for x in case.input_shapes]
        assert [list(x) for x in row.input_strides] == [list(x) for x in case.input_strides]
        scalars = [a for a in json.loads(row["attrs"])["args"] if not isinstance(a, dict)]
        assert scalars == [a for a in case.attrs["args"] if not isinstance(a, dict)]


def test_pool_draws_are_their_own_family_and_replay():
    from maya.estimator.families import family_of

    copies, pools = grid("copy", seed=3, part="random"), grid("pool", seed=3, part="random")
    assert pools and not any("pool" in c.op for c in copies)
    assert {c.family for c in pools} == {"pool"} == {family_of(c.op) for c in pools}
    backward = next(c for c in pools if c.op == "aten::max_pool2d_with_indices_backward")
    replay = build_replay(backward.op, backward.input_shapes, backward.input_dtypes, backward.input_strides,
                          backward.attrs, device="cpu")
    grad_in = replay()
    # The indices are the forward's own: the gradient lands where autograd puts it.
    grad_out, x, kernel, stride, padding = replay.args[:5]
    x = x.detach().float().requires_grad_()
    torch.nn.functional.max_pool2d(x, kernel, stride, padding).backward(grad_out.float())
    assert list(grad_in.shape) == list(backward.input_shapes[1])
    assert (grad_in.float() - x.grad).abs().gt(1e-2 * x.grad.abs().max()).float().mean() < 0.01


def test_sleep_before_times_every_case_behind_a_gpu_sleep(tmp_path, monkeypatch):
    # Normalisations are not in SLEEP_FAMILIES: timed on an idle GPU. --sleep-before times every case
    # behind the sleep.
    from maya.estimator import profiler

    sleeps = []
    real = profiler._Timer.time_us

    def noting(self, fn, reps, sleep=0):
        sleeps.append(sleep)
        return real(self, fn, reps, sleep)

    monkeypatch.setattr(profiler._Timer, "time_us", noting)
    main(["--out", str(tmp_path / "plain"), "--families", "norm", "--quick", "--device", "cpu"])
    assert sleeps and not any(sleeps)
    sleeps.clear()
    main(["--out", str(tmp_path / "slept"), "--families", "norm", "--quick", "--device", "cpu", "--sleep-before"])
    assert sleeps and all(s >= profiler.SLEEP_BEFORE_CYCLES for s in sleeps)
    plain, slept = (pq.read_table(tmp_path / d / "norm.parquet") for d in ("plain", "slept"))
    # A CPU cannot sleep: the rows say no sleep was queued (on a GPU, `--sleep-before` rows say true).
    assert not any(slept.column("sleep_before").to_pylist()) and slept.column("sleep_before").null_count == 0
    assert slept.num_rows == plain.num_rows and slept.schema.equals(plain.schema)


def test_timer_runs_the_untimed_step_before_every_timed_run():
    from maya.estimator.profiler import _Timer

    calls = []
    durations = _Timer(torch.device("cpu")).time_us(lambda: calls.append("op"), 3, before=lambda: calls.append("before"))
    assert calls == ["before", "op"] * 3 and len(durations) == 3


@pytest.mark.parametrize("channels_last", [False, True])
def test_cnn_layout_cases_are_the_signatures_a_cnn_records(scripts, tmp_path, channels_last):
    # The copy and reduction grids timed 1-D and 2-D tensors only; a CNN's 4-D copies and reductions
    # in either memory format are now cases of their own, as the emulator records them.
    import maya
    from maya.estimator.profile_grid import _cnn_copy_cases, _cnn_reduction_cases
    from maya.trace import read_rank_trace

    s = maya.emulate(scripts / "cnn_layouts.py", ["--channels-last"] * channels_last, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    recorded = [r for r in read_rank_trace(s.trace_dir, 0).to_pylist()
                if r["op"].startswith("aten::") and r["op"] != "aten::empty_strided"]
    cases = [*_cnn_copy_cases((4, 16, 10, 12), "bfloat16", channels_last),
             *_cnn_reduction_cases((4, 16, 10, 12), "bfloat16", channels_last)]
    assert [r["op"] for r in recorded] == [c.op for c in cases]
    for row, case in zip(recorded, cases):
        assert [tuple(x) for x in row["input_shapes"]] == list(case.input_shapes)
        assert [tuple(x) for x in row["input_strides"]] == list(case.input_strides)
        attrs = json.loads(row["attrs"])
        assert attrs["args"][1:] == case.attrs["args"][1:]
        assert {k: attrs["kwargs"].get(k) for k in case.attrs["kwargs"]} == case.attrs["kwargs"]
    assert {c.op for c in grid("copy", part="cnn")} == {"aten::_to_copy", "aten::clone"}
    assert grid("reduction", part="cnn") == [c for c in grid("reduction", part="fixed") if len(c.input_shapes[0]) == 4]
    assert grid("gemm", part="cnn") == [] and grid("copy", part="cnn", quick=True) == []
    with pytest.raises(ValueError, match="pick one"):
        run_profile(tmp_path / "p", families=["copy"], device="cpu", random_only=True, cnn_layouts=True)


@pytest.mark.parametrize("precision", ["bf16-autocast", "fp32", "bf16"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_cnn_norm_cases_are_the_signatures_a_cnn_records(scripts, tmp_path, channels_last, precision):
    # The norm grid timed batch norm at ResNet-50's shapes only, group norm not at all, and layer norm
    # on a transformer's contiguous tokens: its CNN-layout cases are a CNN's batch, group and channel
    # layer norms, forward and backward, as the emulator records them (group norm on a contiguous
    # input: CUDA copies a channels-last one first; layer norm over the NHWC view, which on an NCHW
    # tensor is a permutation that CUDA's layer norm copies first too, `maya.emulator.operand_copies`,
    # so the op itself runs on a contiguous NHWC tensor either way).
    import maya
    from maya.estimator.profile_grid import _channel_layer_norm_cases, _cnn_batch_norm_cases, _group_norm_cases
    from maya.trace import read_rank_trace

    argv = ["--precision", precision] + ["--channels-last"] * channels_last
    s = maya.emulate(scripts / "cnn_norms.py", argv, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    recorded = [r for r in read_rank_trace(s.trace_dir, 0).to_pylist() if "_norm" in r["op"]]
    shape = (4, 64, 10, 12)
    batch_norm = [] if precision == "bf16" else _cnn_batch_norm_cases(shape, "float32" if precision == "fp32" else "bfloat16", channels_last)
    dtype = "bfloat16" if precision == "bf16" else "float32"  # autocast runs group and layer norm in float32
    cases = [*batch_norm, *_group_norm_cases(shape, dtype, 32),
             *_channel_layer_norm_cases(shape, dtype, permuted=False)]
    if precision == "bf16":  # bfloat16 parameters: a batch norm no grid case times
        recorded = [r for r in recorded if "batch_norm" not in r["op"]]
    assert [r["op"] for r in recorded] == [c.op for c in cases]
    for row, case in zip(recorded, cases):
        assert [tuple(x) for x in row["input_shapes"]] == list(case.input_shapes)
        assert [tuple(x) for x in row["input_strides"]] == list(case.input_strides)
        assert list(row["input_dtypes"]) == list(case.input_dtypes)
        scalars = [a for a in json.loads(row["attrs"])["args"] if not isinstance(a, dict)]
        assert scalars == [a for a in case.attrs["args"] if not isinstance(a, dict)]
    norms = grid("norm", part="cnn")
    assert {c.op for c in norms if "group" in c.op} == {"aten::native_group_norm", "aten::native_group_norm_backward"}
    assert grid("norm", part="fixed")[-len(norms):] == norms


def test_factory_and_random_ops_are_timed_on_the_device_with_their_output_bytes(quick_profile):
    rows = pq.read_table(quick_profile / "elementwise.parquet").to_pylist()
    made = [r for r in rows if r["op"] in ("aten::zeros", "aten::ones", "aten::full", "aten::randn", "aten::rand",
                                           "aten::randint.low")]
    assert {r["op"] for r in made} == {"aten::zeros", "aten::ones", "aten::full", "aten::randn", "aten::rand",
                                       "aten::randint.low"}
    for r in made:  # as a trace records them: no tensor input; made on the timing device (the CPU here)
        assert r["input_shapes"] == []
        assert json.loads(r["attrs"])["kwargs"]["device"] == {"$device": "cpu"}
        (shape,) = r["output_shapes"]
        element = 8 if r["op"] == "aten::randint.low" else 4
        assert r["bytes"] == element * shape[0] and r["duration_us"] > 0
    assert {r["op"] for r in rows if r["input_shapes"] and r["op"].endswith(("normal_", "uniform_"))} == {
        "aten::normal_", "aten::uniform_"}


@pytest.mark.parametrize("channels_last", [False, True])
def test_resampling_cases_are_the_signatures_a_cnn_records(scripts, tmp_path, channels_last, caplog):
    # No profile had timed upsampling or adaptive pooling before session 36: the copy model guessed
    # the forwards and roofline the backwards. The pool grid now times them as the emulator records them.
    import maya
    from maya.estimator.estimate import estimate_trace
    from maya.estimator.families import family_of
    from maya.estimator.profile_grid import _image, make_case
    from maya.trace import read_rank_trace

    s = maya.emulate(scripts / "resampling.py", ["--channels-last"] * channels_last, trace_dir=tmp_path / "t")
    assert s.exit_code == 0, s.error
    trace = read_rank_trace(s.trace_dir, 0)
    ops = trace.to_pandas()
    assert "aten::as_strided_" not in set(ops.op)  # a restride launches no kernel
    recorded = ops[ops.op.str.contains("upsample|adaptive")]
    x, up = _image((2, 16, 14, 14), "bfloat16", channels_last), _image((2, 16, 28, 28), "bfloat16", channels_last)
    pooled = _image((2, 16, 7, 7), "bfloat16", channels_last)
    cases = [make_case("pool", "aten::upsample_nearest2d", [x, [28, 28], 2.0, 2.0]),
             make_case("pool", "aten::upsample_nearest2d_backward", [up, [28, 28], [2, 16, 14, 14], 2.0, 2.0]),
             make_case("pool", "aten::upsample_bilinear2d", [x, [28, 28], False, 2.0, 2.0]),
             make_case("pool", "aten::upsample_bilinear2d_backward", [up, [28, 28], [2, 16, 14, 14], False, 2.0, 2.0]),
             make_case("pool", "aten::_adaptive_avg_pool2d", [x, [7, 7]]),
             make_case("pool", "aten::_adaptive_avg_pool2d_backward", [pooled, x])]
    assert sorted(recorded.op) == sorted(c.op for c in cases)
    for case in cases:
        assert family_of(case.op) == "pool"
        row = recorded[recorded.op == case.op].iloc[0]
        assert [list(v) for v in row.input_shapes] == [list(v) for v in case.input_shapes]
        assert [list(v) for v in row.input_strides] == [list(v) for v in case.input_strides]
        scalars = [a for a in json.loads(row["attrs"])["args"] if not isinstance(a, dict)]
        assert scalars == [a for a in case.attrs["args"] if not isinstance(a, dict)]
    with caplog.at_level("WARNING"):
        est = estimate_trace(trace, gpu="h200")
    sources = dict(zip(est.op, est.estimate_source))
    assert {sources[c.op] for c in cases} <= {"catboost", "exact"}
    assert sources["aten::randn_like"] == "roofline"  # a generator: roofline by design, no warning
    assert "had no model" not in caplog.text
