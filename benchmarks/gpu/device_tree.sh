#!/usr/bin/env bash
# Keep the checkout under the device tool's 64 MiB carry limit for a device call, from the repository root:
#   bash benchmarks/gpu/device_tree.sh out     # before the call: move the folders below aside
#   bash benchmarks/gpu/device_tree.sh back    # right after it (and before any commit): move them back
# The folders moved are committed data no device call reads: five benchmark folders of earlier
# measurements and the fitted models (the profiler, the ground-truth runners and the probes never load
# them). They go to $MAYA_DEVICE_ASIDE (default /tmp/maya-device-aside). `out` refuses when that
# already holds them (a call whose `back` was never run); `back` refuses to overwrite a folder that
# exists again in the checkout. `out` prints the bytes the call will carry (files git tracks or does
# not ignore).
set -eu
ROOT=${MAYA_DEVICE_ROOT:-$PWD}
ASIDE=${MAYA_DEVICE_ASIDE:-/tmp/maya-device-aside}
FOLDERS=(benchmarks/gpu/host_profile_h200x4 benchmarks/gpu/conv_kernels_h200 benchmarks/gpu/random_draws_h200 benchmarks/gpu/session37
         benchmarks/gpu/session39/s39b
         maya/estimator/data/h200/models)
case "${1:-}" in
  out)
    for f in "${FOLDERS[@]}"; do
      if [ -e "$ASIDE/$f" ]; then echo "device_tree.sh: $ASIDE/$f exists: run 'back' first" >&2; exit 1; fi
    done
    for f in "${FOLDERS[@]}"; do
      [ -e "$ROOT/$f" ] || continue
      mkdir -p "$ASIDE/$(dirname "$f")"; mv "$ROOT/$f" "$ASIDE/$f"
    done
    if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
      bytes=$(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null \
        | awk '{s += $1} END {print s + 0}')
      echo "device_tree.sh: the call will carry $bytes bytes ($((bytes / 1048576)) MiB of 64)"
    fi ;;
  back)
    for f in "${FOLDERS[@]}"; do
      if [ -e "$ASIDE/$f" ] && [ -e "$ROOT/$f" ]; then echo "device_tree.sh: $ROOT/$f exists again: not overwritten" >&2; exit 1; fi
    done
    for f in "${FOLDERS[@]}"; do
      [ -e "$ASIDE/$f" ] || continue
      mkdir -p "$ROOT/$(dirname "$f")"; mv "$ASIDE/$f" "$ROOT/$f"
    done ;;
  *) echo "usage: bash benchmarks/gpu/device_tree.sh out|back" >&2; exit 2 ;;
esac
