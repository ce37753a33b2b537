#!/usr/bin/env bash
# Session 19 device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session19_h200/call2.sh OUT
# Call 1 (s19a) timed the held-out seed-1 convolutions idle and behind a GPU sleep, and conv draws 66-71
# behind the sleep, on one machine. This call, on another lease, times the held-out set behind the
# sleep again (does that timing repeat across leases?), then the rest of the fixed conv grid behind the
# sleep (shards 1-3 and 5-7 of 8), then conv draws of seeds 72-80 behind the sleep until 420 s.
# (A first version, which timed draws 66-71 idle instead, never ran: no machine could be started; this
# one to 540 s was cut off when the machine was taken back, and reruns to 420 s in the budget left.)
set -u
out=${1:?usage: call2.sh OUT}; DIR=/tmp/s19b
source benchmarks/gpu/device_call_start.sh
timeout 120 python3 -m maya.estimator.profiler --out $DIR/heldout_sleep --random-only --seed 1 --families conv --sleep-before > $DIR/heldout_sleep.log 2>&1
echo "heldout_sleep rc=$? at $SECONDS s" >> $DIR/jobs.txt
for shard in 1 2 3 5 6 7; do
  timeout 60 python3 -m maya.estimator.profiler --out $DIR/grid_sleep_$shard --families conv --sleep-before --shard $shard/8 > $DIR/grid_sleep_$shard.log 2>&1
  echo "grid_sleep shard $shard/8 rc=$? at $SECONDS s" >> $DIR/jobs.txt
done
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((420 - SECONDS)) $(for s in $(seq 72 80); do echo conv:$s:sleep-before; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s19b.tgz" -C /tmp s19b
