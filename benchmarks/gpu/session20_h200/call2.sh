#!/usr/bin/env bash
# Session 20 device call 2 (1 x H200), from the repository root: bash benchmarks/gpu/session20_h200/call2.sh OUT
# More convolution draws behind a GPU sleep (since 0dcfddd `maya profile` times every convolution so:
# profiler.SLEEP_FAMILIES), seeds 82-89 until 520 s (seeds up to 73 are drawn: 66-73 behind the sleep in
# session 19, conv_sleep.parquet). Not yet run.
set -u
out=${1:?usage: call2.sh OUT}; DIR=/tmp/s20b
source benchmarks/gpu/device_call_start.sh
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((520 - SECONDS)) $(for s in $(seq 82 89); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s20b.tgz" -C /tmp s20b
