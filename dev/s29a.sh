#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: dev/wtconv_dense/cublas_pieces (the dense small-map
# WTConv on cuBLAS, piece by piece) beside the product's bench-layer bf16 at B = 64 and 128.
# Pack: ninja -C build wtconv_cublas_pieces && cp build/dev/wtconv_dense/wtconv_cublas_pieces build/labbin/cublas_pieces,
# then dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s29a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
$L/cublas_pieces 20 | tee $OUT/pieces.txt
for b in 64 128; do
  timeout 60 $L/hg_new bench-layer --kernel 5 --precision bf16 --batch $b > $R/bl-$b.txt 2>&1
  echo "== B $b"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$b.txt
done | tee $OUT/bench-layer.txt
el done
