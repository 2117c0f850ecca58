#!/usr/bin/env bash
# Sourced by the dev/s6*.sh device scripts, from the repository root: builds into /tmp/b
# (dev/gpu-build.sh), then defines what each of them used to repeat:
#   el MSG            seconds since the build ended, and MSG
#   left              seconds of $BUDGET (default 570) still left
#   ok LOG            the gtest PASSED / FAILED lines of LOG
#   HG                the program
#   jpeg_folder DIR PER_CLASS JOBS
#                     scripts/make-jpeg-folder.py into DIR (40 classes, PER_CLASS training and 4
#                     validation images each) in the background unless DIR/train exists; MK is its
#                     pid, its log /tmp/mk-$(basename DIR).log
source dev/gpu-build.sh
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
HG=/tmp/b/haargrad
jpeg_folder() {
  ( [ -d "$1/train" ] || python3 scripts/make-jpeg-folder.py --out "$1" --classes 40 --train-per-class "$2" \
      --val-per-class 4 --jobs "$3" > "/tmp/mk-$(basename "$1").log" 2>&1 ) &
  MK=$!
}
