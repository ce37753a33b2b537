#!/usr/bin/env bash
# Session 19 device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session19_h200/call2.sh OUT
# Call 1 (s19a) timed the held-out seed-1 convolutions idle and behind a GPU sleep, and conv draws 66-71
# behind the sleep, on one machine. This call, on another lease, times the held-out set again both
# ways (does each timing repeat across leases?) and draws 66-71 idle (a model of idle rows from the
# same lease as its held-out timing, as call 1's sleep model had).
set -u
out=${1:?usage: call2.sh OUT}; DIR=/tmp/s19b
source benchmarks/gpu/device_call_start.sh
timeout 120 python3 -m maya.estimator.profiler --out $DIR/heldout_sleep --random-only --seed 1 --families conv --sleep-before > $DIR/heldout_sleep.log 2>&1
echo "heldout_sleep rc=$? at $SECONDS s" >> $DIR/jobs.txt
timeout 120 python3 -m maya.estimator.profiler --out $DIR/heldout_idle --random-only --seed 1 --families conv > $DIR/heldout_idle.log 2>&1
echo "heldout_idle rc=$? at $SECONDS s" >> $DIR/jobs.txt
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((500 - SECONDS)) $(for s in $(seq 66 71); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s19b.tgz" -C /tmp s19b
