#!/usr/bin/env bash
# Session 18, device call 3 (1 x H200), from the repository root: bash benchmarks/gpu/session18_h200/call3.sh OUT
# Convolution draws 53-62 until 300 s (seeds 46-51 lowered the fit split's error 14.4%/23.9% -> 14.2%/23.4%).
# Written straight into OUT (what a call leaves there comes back even if it is stopped at its limit).
set -u
out=${1:?usage: call3.sh OUT}; DIR=$out/s18c
source benchmarks/gpu/device_call_start.sh
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((300 - SECONDS)) $(for s in $(seq 53 62); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
