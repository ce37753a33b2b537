#!/usr/bin/env bash
# Next session's device call 1 (1 x H200), from the repository root: bash benchmarks/gpu/session19_h200/call1.sh OUT
# Convolutions timed behind a GPU sleep (`maya profile --sleep-before`, commit after 317615c), against the
# idle-GPU timing on the same machine (benchmarks/results/conv_timing_gaps_h200.md): the held-out seed-1
# convolutions both ways, then the fixed grid's first quarter behind the sleep until 330 s, then draws of
# seeds 66-75 behind the sleep until 520 s (seeds up to 65 were drawn before).
set -u
out=${1:?usage: call1.sh OUT}; DIR=/tmp/s19a
source benchmarks/gpu/device_call_start.sh
timeout 120 python3 -m maya.estimator.profiler --out $DIR/heldout_idle --random-only --seed 1 --families conv > $DIR/heldout_idle.log 2>&1
echo "heldout_idle rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 150 python3 -m maya.estimator.profiler --out $DIR/heldout_sleep --random-only --seed 1 --families conv --sleep-before > $DIR/heldout_sleep.log 2>&1
echo "heldout_sleep rc=$? at $SECONDS s" >> $DIR/jobs.txt
# shards 0/8 and 4/8 together are the grid's 0/4; two runs, because a run stopped by its timeout writes nothing
for shard in 0 4; do
  timeout $((330 - SECONDS)) python3 -m maya.estimator.profiler --out $DIR/grid_sleep_$shard --families conv --sleep-before --shard $shard/8 > $DIR/grid_sleep_$shard.log 2>&1
  echo "grid_sleep shard $shard/8 rc=$? at $SECONDS s" >> $DIR/jobs.txt
done
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((520 - SECONDS)) $(for s in $(seq 66 75); do echo conv:$s:sleep-before; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s19a.tgz" -C /tmp s19a
