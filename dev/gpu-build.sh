#!/usr/bin/env bash
# On the GPU machine: configure (once) and build into /tmp/b; on failure prints the log's errors
# (log: /tmp/b.log). Development runs through the device tool: `source dev/gpu-build.sh && ...`
D=$PWD/.deps/root/usr
export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
B=${B:-/tmp/b}
if [ ! -f $B/build.ninja ]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=ON -DBUILD_TESTING=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D -DCMAKE_INCLUDE_PATH=$D/include > /tmp/b.log 2>&1 \
    || { echo "configure failed:"; tail -30 /tmp/b.log; }
fi
if ! cmake --build $B -j16 -- -k 0 >> /tmp/b.log 2>&1; then
  echo "build failed:"; grep -iE -A5 "error|FAILED" /tmp/b.log | head -60
fi
