#!/usr/bin/env bash
# Device call 2 of session 31 (1 x H200), from the repository root: bash benchmarks/gpu/session31_h200/call2.sh OUT [END] [FIRST]
# Convolution draws from seed FIRST (default 217: session 29's call2.sh, run as call 1 of session 31,
# drew 213-215 and ran out of time in 216) to 240, until END s (default 470). In /tmp/s31_FIRST
# (/tmp/s31b for 217), tarred to OUT/s31b.tgz. Run `bash benchmarks/gpu/device_tree.sh out` before the
# call and `bash benchmarks/gpu/device_tree.sh back` right after it.
set -u
out=${1:?usage: call2.sh OUT [END] [FIRST]}; end=${2:-470}; first=${3:-217}
DIR=/tmp/s31b; [ "$first" = 217 ] || DIR=/tmp/s31_$first
source benchmarks/gpu/device_call_start.sh
bash benchmarks/gpu/run_random_draws.sh $DIR/draws 0 $((end - SECONDS)) $(for s in $(seq "$first" 240); do echo conv:$s; done) >> $DIR/jobs.txt
date -u +%FT%TZ >> $DIR/env.txt
tar czf "$out/s31b.tgz" -C /tmp "$(basename $DIR)"
