#!/bin/bash
# Shared memory, registers and spills of patch 0024's configs (the sm90
# heuristics at head_dim 64, 96 and 128), bf16, causal, cap 50, B1 T1024
# H8/4, at both precisions, without and with an f32 bias [1, 8, T, T].
# Usage, from the repository root, with TRITON_PYTHON a Python that has
# triton 3.6.0 installed:
#   results/cpu-2026-12-02-configs-probe/probe.sh OUTDIR
OUT=$1; P=results/cpu-2026-12-01-compile-probe; mkdir -p $OUT
run() { local d=$1 p=$2 b=$3; local o=$OUT/d$d-$p-$b
  if [ $b = bias ]; then export BSHAPE=1,8,1024,1024 BDT=float32; else unset BSHAPE BDT; fi
  timeout 600 .venv/bin/python -P $P/dump_ttir.py $o 1,1024,8,4,$d bfloat16 $p > $o.dump.log 2>&1
  echo "== head_dim $d, $p, $b" > $o/report.txt
  timeout 900 $TRITON_PYTHON $P/compile_ttir.py $o >> $o/report.txt 2>&1; }
for d in 64 96 128; do for p in default highest; do for b in nobias bias; do run $d $p $b; done; done; done
cat $OUT/*/report.txt
