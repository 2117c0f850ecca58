#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's second call, prebuilt binaries (dev/labbin-pack.sh;
# hg_new = commit af4b10a's program): how long the GPU sits idle between the kernels of a graphed
# bf16 training step (ConvNeXt-T and WTConvNeXt-T, B = 128), from Nsight Systems with the graph
# traced per node (dev/nsys_gaps.py over the last 4 steps). V=hg_base runs that program instead. The question: would programmatic
# dependent launch pay?
NAME=s21b
source dev/labbin-lib.sh
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"
for m in convnext_tiny:85.8 wtconvnext_tiny:103.5; do
  model=${m%%:*}; win=${m##*:}
  timeout 150 $NSYS profile --cuda-graph-trace=node -t cuda --sample=none --cpuctxsw=none \
    -o /tmp/nv-$model -f true $L/${V:-hg_new} bench --device cuda --batch 128 --img-size 224 \
    --precision bf16 --models $model --wtconv fused --steps 10 --warmup 3 > $R/nv-$model.log 2>&1
  echo "== $model nsys rc $?"; grep -E "^$model" $R/nv-$model.log | cut -c1-120
  # this nsys (Nsight Compute's bundle) leaves a .qdstrm: its importer makes the report
  # (it needs elfutils' libdw, carried: build/labpack/nsysdeps.tar.xz, copied from this machine's
  # Debian packages libdw1, libelf1, liblzma5, libbzip2-1.0)
  [ -d /tmp/nsysdeps ] || tar -C /tmp -xJf build/labpack/nsysdeps.tar.xz
  [ -f /tmp/nv-$model.nsys-rep ] || LD_LIBRARY_PATH=/tmp/nsysdeps:$LD_LIBRARY_PATH $(dirname $NSYS)/../linux-desktop-glibc_2_11_3-x64/QdstrmImporter \
    -i /tmp/nv-$model.qdstrm > $R/imp.log 2>&1
  timeout 150 $NSYS stats -r cuda_gpu_trace --format csv -o /tmp/gt-$model /tmp/nv-$model.nsys-rep > $R/st.log 2>&1
  python3 dev/nsys_gaps.py /tmp/gt-${model}_cuda_gpu_trace.csv $win | tee $OUT/gaps-$model.txt
  el $model
done
