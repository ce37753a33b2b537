"""cluster/: the Ray cluster-launcher YAML passes Ray's own schema; the KubeRay manifest asks for no GPU."""

import yaml

from conftest import ROOT

CLUSTER = ROOT / "cluster"


def test_cluster_launcher_config_is_valid_for_ray():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    validate_config(prepare_config(config))  # what `ray up` does first: raises on a config it would refuse
    assert any("pip install -q -e /home/ubuntu/maya" in c for c in config["setup_commands"])
    assert config["file_mounts"] == {"/home/ubuntu/maya": "."}
    assert all("Gpu" not in t["node_config"]["InstanceType"] for t in config["available_node_types"].values())


def test_kuberay_manifest_is_cpu_only_and_runs_the_maya_image():
    manifest = yaml.safe_load((CLUSTER / "kuberay-raycluster.yaml").read_text())
    assert manifest["apiVersion"] == "ray.io/v1" and manifest["kind"] == "RayCluster"
    spec = manifest["spec"]
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    for group in groups:
        assert group["rayStartParams"]["num-gpus"] == "0"
        for container in group["template"]["spec"]["containers"]:
            assert container["image"] == "REGISTRY/maya-tune:latest"
            for kind in ("requests", "limits"):
                assert "nvidia.com/gpu" not in container["resources"][kind]
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert f"rayproject/ray:{spec['rayVersion']}-py311-cpu" in dockerfile and "pip install" in dockerfile
