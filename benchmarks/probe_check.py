"""What the probe checks share (`cuda_graph_check.py`, `flex_attention_check.py`, `float8_gemm_check.py`):
each compares one GPU probe's output on a GPU with the same probe's output under `maya emulate`, both
JSON files with an `env` and `rows`, and prints a Markdown table."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def measured_on(env: dict) -> str:
    """The table's first line: the GPU and software that measured it."""
    return (f"Measured on {env.get('gpu_name')} (torch {env.get('torch_version')}, CUDA {env.get('cuda_version')}, "
            f"{env.get('date')}).")


def main(doc: str, joined: Callable[[dict, dict], pd.DataFrame], report: Callable[[pd.DataFrame, dict], str]) -> None:
    """`CHECK GPU.json MAYA.json [--out table.md]`: print `report(joined(gpu, maya), gpu's env)`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("gpu", type=Path, help="the probe's output on the GPU")
    p.add_argument("maya", type=Path, help="the probe's output under maya emulate")
    p.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = p.parse_args()
    gpu, maya = json.loads(args.gpu.read_text()), json.loads(args.maya.read_text())
    text = report(joined(gpu, maya), gpu.get("env", {}))
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
