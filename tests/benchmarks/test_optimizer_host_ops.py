import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from optimizer_host_ops import main, optimizer_gaps  # noqa: E402


def _op(name, t, thread=0, backward=False):
    return {"op": name, "t_us": t, "thread": thread, "backward": backward}


def test_the_step_starts_at_the_first_foreach_op_and_each_op_owns_the_gap_after_it():
    probe = {"ops": [_op("aten.mm.default", 0.0), _op("aten.mm.default", 5.0, thread=1, backward=True),
                     _op("aten._foreach_mul_.Scalar", 10.0), _op("aten._local_scalar_dense.default", 30.0),
                     _op("aten._local_scalar_dense.default", 37.0), _op("aten._foreach_add_.Scalar", 44.0)]}
    n, gaps = optimizer_gaps(probe)
    assert n == 4
    assert gaps == {"aten._foreach_mul_.Scalar": (1, 20.0), "aten._local_scalar_dense.default": (2, 14.0)}
    assert optimizer_gaps({"ops": [_op("aten.mm.default", 0.0)]}) == (0, {})


def test_adamw_reads_each_step_counter_twice_on_every_lease(capsys):
    # The committed probes of two machines: AdamW(foreach) issues the same `.item()` calls each time,
    # an even number (two per parameter); SGD (DLRM) none.
    counts = []
    for lease in (ROOT / "benchmarks/gpu/host_phase_h100/lease_c", ROOT / "benchmarks/gpu/host_phase_h200/lease_o"):
        probe = json.loads(gzip.decompress((lease / "mlp_tiny_adamw.json.gz").read_bytes()))
        counts.append(optimizer_gaps(probe)[1]["aten._local_scalar_dense.default"][0])
        dlrm = json.loads(gzip.decompress((lease / "dlrm_fp32.json.gz").read_bytes()))
        assert "aten._local_scalar_dense.default" not in optimizer_gaps(dlrm)[1]
    assert counts[0] == counts[1] and counts[0] % 2 == 0 and counts[0] > 100
    main([str(ROOT / "benchmarks/gpu/host_phase_h100/lease_c"), "--top", "1"])
    assert f"aten._local_scalar_dense.default              x{counts[0]}" in capsys.readouterr().out
