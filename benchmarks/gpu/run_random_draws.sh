#!/usr/bin/env bash
# More training rows for the CatBoost models: the random draws (shapes off the fixed grid) of more
# seeds, on one GPU, from the repository root:
#   bash benchmarks/gpu/run_random_draws.sh OUT GPU SECONDS JOB...
# JOB is FAMILY:SEED, FAMILY:SEED:no-tf32, conv:SEED:flip-grad-layout or sdpa:SEED:attention-dropout=P. Each job runs
#   python3 -m maya.estimator.profiler --out OUT/FAMILY_seedSEED[_MODE] --random-only --seed SEED --families FAMILY [--MODE]
# on CUDA_VISIBLE_DEVICES=GPU. Jobs run one after another until SECONDS have passed: a job still running
# then is stopped (its rows are lost) and later jobs are not started. Seed 1 is refused: its draws are
# the held-out set of benchmarks/estimator_accuracy.py (benchmarks/gpu/heldout_ops_h200).
set -u
out=${1:?usage: run_random_draws.sh OUT GPU SECONDS JOB...}; gpu=${2:?GPU}; seconds=${3:?SECONDS}; shift 3
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
deadline=$((SECONDS + seconds))
for job in "$@"; do
  IFS=: read -r family seed mode <<< "$job"
  if [ "$seed" = 1 ]; then echo "refusing $job: seed 1 is the held-out set" >&2; exit 2; fi
  left=$((deadline - SECONDS))
  if [ "$left" -le 5 ]; then echo "skipped $job: out of time"; continue; fi
  dir="$out/${family}_seed${seed}${mode:+_$mode}"
  flags=(); [ -n "$mode" ] && flags=("--$mode")
  start=$SECONDS
  CUDA_VISIBLE_DEVICES=$gpu timeout "$left" python3 -m maya.estimator.profiler --out "$dir" --random-only \
    --seed "$seed" --families "$family" "${flags[@]}" > "$dir.log" 2>&1
  echo "$job rc=$? $((SECONDS - start)) s"
done
