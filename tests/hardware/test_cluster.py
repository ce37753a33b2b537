"""Cluster presets, YAML loading and validation messages."""

import pytest

from maya.hardware.cluster import available_clusters, cluster_from_dict, load_cluster

BASE = {"gpu": "h100", "gpus_per_node": 8, "nics_per_node": 8, "nic_bandwidth_Gbps": 400}


def test_presets_load_with_units_converted():
    assert {"dgx-a100", "dgx-h100", "dgx-h200", "hgx-h200"} <= set(available_clusters())
    h100 = load_cluster("dgx-h100")
    assert (h100.gpu, h100.gpus_per_node, h100.nics_per_node) == ("h100", 8, 8)
    assert h100.nic_bandwidth_bytes_per_s == 50e9  # 400 Gb/s
    assert h100.nvlink_bandwidth_bytes_per_s == 450e9  # from the GPU catalog
    a100 = load_cluster("dgx-a100")
    assert a100.nic_bandwidth_bytes_per_s == 25e9 and a100.gpu_spec.key == "a100"
    assert load_cluster("hgx-h200").price_per_gpu_hour_usd == 3.50  # the catalog's default price


def test_nodes_override_and_placement():
    cluster = load_cluster("dgx-h200", nodes=16)
    assert cluster.world_size == 128
    assert cluster.node_of(17) == 2 and cluster.nvlink_domain_of(7) == 0
    assert cluster.cost_per_hour_usd() == pytest.approx(128 * 3.50)


def test_world_size_too_large_names_the_numbers():
    with pytest.raises(ValueError, match=r"world_size=1024 > nodes=16 \* gpus_per_node=8 = 128"):
        load_cluster("dgx-h100", nodes=16).check_world_size(1024)


def test_bad_field_names_field_and_value():
    with pytest.raises(ValueError, match="gpus_per_node=0 must be an integer >= 1"):
        cluster_from_dict({**BASE, "gpus_per_node": 0})
    with pytest.raises(ValueError, match="nvlink_domain_size=3 must divide or be a multiple of gpus_per_node=8"):
        cluster_from_dict({**BASE, "nvlink_domain_size": 3})
    with pytest.raises(ValueError, match=r"nodes=3 \* gpus_per_node=4 = 12 GPUs is not a whole number of nvlink_domain_size=8"):
        cluster_from_dict({**BASE, "gpus_per_node": 4, "nodes": 3, "nvlink_domain_size": 8})
    with pytest.raises(ValueError, match="nic_bandwidth_bytes_per_s=0.0 must be > 0"):
        cluster_from_dict({**BASE, "nic_bandwidth_Gbps": 0})
    with pytest.raises(ValueError, match=r"missing keys \['gpus_per_node'\], unknown keys \['nic_bandwidth_GBps'\]"):
        cluster_from_dict({"gpu": "h100", "nics_per_node": 8, "nic_bandwidth_Gbps": 400, "nic_bandwidth_GBps": 50})


def test_unknown_preset_lists_presets():
    with pytest.raises(ValueError, match="unknown cluster 'dgx-z9'; presets: dgx-a100"):
        load_cluster("dgx-z9")


def test_yaml_file_with_nvl72_domain(tmp_path):
    path = tmp_path / "nvl72.yaml"
    path.write_text(
        "gpu: h200\nnodes: 18\ngpus_per_node: 4\nnvlink_domain_size: 72\nnics_per_node: 4\n"
        "nic_bandwidth_Gbps: 800\nnvlink_bandwidth_GBps: 900\nprice_per_gpu_hour_usd: 6.0\n"
    )
    cluster = load_cluster(path)
    assert cluster.name == "nvl72" and cluster.world_size == 72
    assert cluster.nvlink_domain_of(71) == 0 and cluster.node_of(71) == 17
    assert cluster.nvlink_bandwidth_bytes_per_s == 900e9 and cluster.price_per_gpu_hour_usd == 6.0


def test_unknown_gpu_and_wrong_types_name_the_field():
    with pytest.raises(ValueError, match=r"cluster 'custom': gpu='b300' is not in the GPU catalog \(a100, h100, h200\)"):
        cluster_from_dict({**BASE, "gpu": "b300"})
    with pytest.raises(ValueError, match="cluster 'custom': gpus_per_node=8.5 must be an integer >= 1"):
        cluster_from_dict({**BASE, "gpus_per_node": 8.5})
    with pytest.raises(ValueError, match="cluster 'custom': nodes=True must be an integer >= 1"):
        cluster_from_dict({**BASE, "nodes": True})
    with pytest.raises(ValueError, match="cluster 'custom': nic_bandwidth_Gbps='fast' must be a number"):
        cluster_from_dict({**BASE, "nic_bandwidth_Gbps": "fast"})
    with pytest.raises(ValueError, match=r"cluster 'x': missing keys \['nics_per_node', 'nic_bandwidth_Gbps'\]"):
        cluster_from_dict({"name": "x", "gpu": "h100", "gpus_per_node": 8})


def test_job_that_does_not_fill_whole_nodes_names_the_numbers():
    cluster = load_cluster("dgx-h100", nodes=2)
    cluster.check_world_size(4)  # part of one node: fine
    cluster.check_world_size(16)
    with pytest.raises(ValueError, match=r"world_size=12 .* not a multiple of gpus_per_node=8 .* \(12 % 8 = 4\)"):
        cluster.check_world_size(12)


def test_yaml_file_missing_or_not_a_mapping(tmp_path):
    with pytest.raises(ValueError, match="cluster spec file .*nope.yaml' not found"):
        load_cluster(tmp_path / "nope.yaml")
    path = tmp_path / "list.yaml"
    path.write_text("- gpu: h100\n")
    with pytest.raises(ValueError, match="must hold a mapping of keys, got list"):
        load_cluster(path)
    path = tmp_path / "big.yaml"
    path.write_text("gpu: h100\nnodes: 2\ngpus_per_node: 8\nnics_per_node: 8\nnic_bandwidth_Gbps: 400\n")
    with pytest.raises(ValueError, match=r"world_size=32 > nodes=2 \* gpus_per_node=8 = 16 GPUs of cluster 'big'"):
        load_cluster(path).check_world_size(32)
