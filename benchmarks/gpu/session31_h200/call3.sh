#!/usr/bin/env bash
# Device call 3 of session 31 (1 x H200), from the repository root: bash benchmarks/gpu/session31_h200/call3.sh OUT [END]
# Convolution draws from seed 225 onwards (call 2 drew 217-224; 225 stopped at its end)
# until END s (default 470). In /tmp/s31c, tarred to OUT/s31c.tgz. Run
# `bash benchmarks/gpu/device_tree.sh out` before the call and `bash benchmarks/gpu/device_tree.sh back` right after it.
set -u
out=${1:?usage: call3.sh OUT [END]}; end=${2:-470}; DIR=/tmp/s31c
source benchmarks/gpu/device_call_start.sh
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in $(seq 225 240); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s31c.tgz" -C /tmp s31c
