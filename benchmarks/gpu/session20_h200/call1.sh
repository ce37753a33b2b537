#!/usr/bin/env bash
# Session 20 device calls 1 and 2 (1 x H200), from the repository root:
#   bash benchmarks/gpu/session20_h200/call1.sh OUT s20a 74 81     # call 1
#   bash benchmarks/gpu/session20_h200/call1.sh OUT s20b 82 89 END # call 2: draws stop at END s (default 520)
# More convolution draws behind a GPU sleep (since 0dcfddd `maya profile` times every convolution so:
# profiler.SLEEP_FAMILIES), seeds FIRST-LAST until 520 s, in /tmp/NAME, tarred to OUT/NAME.tgz (seeds up
# to 73 are drawn: 66-73 behind the sleep in session 19, conv_sleep.parquet). Not yet run.
set -u
out=${1:?usage: call1.sh OUT NAME FIRST LAST [END]}; name=${2:?NAME}; first=${3:?FIRST}; last=${4:?LAST}; end=${5:-520}
DIR=/tmp/$name
source benchmarks/gpu/device_call_start.sh
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in $(seq $first $last); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/$name.tgz" -C /tmp $name
