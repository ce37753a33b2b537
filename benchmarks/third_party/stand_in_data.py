"""Stand-in data files for third-party training scripts run under `maya emulate` (benchmarks/third_party/run.sh).

    python stand_in_data.py nanogpt DIR   # DIR/train.bin and DIR/val.bin: 2,000,000 uint16 GPT-2 token ids each
    python stand_in_data.py c4_test DIR   # DIR/data.json: 2,000 JSON lines {"text": ...} of 200-800 common English words

Both are seeded, so every run writes the same bytes. The scripts read them only for token ids of fixed
shapes, so the predictions do not depend on their contents.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
         "you were her she there would their we him been has when who will more no if out so said what up its about into "
         "than them can only other new some could time these two may then do first any my now such like our over man me "
         "even most made after also did many before must through back years where much your way well down should because "
         "each just those people").split()


def nanogpt(directory: Path) -> None:
    rng = np.random.default_rng(0)
    for name in ("train.bin", "val.bin"):
        rng.integers(0, 50257, size=2_000_000, dtype=np.uint16).tofile(directory / name)


def c4_test(directory: Path) -> None:
    rng = random.Random(0)
    with open(directory / "data.json", "w") as f:
        for _ in range(2000):
            f.write(json.dumps({"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(200, 800)))}) + "\n")


if __name__ == "__main__":
    kind, directory = sys.argv[1], Path(sys.argv[2])
    directory.mkdir(parents=True, exist_ok=True)
    {"nanogpt": nanogpt, "c4_test": c4_test}[kind](directory)
