#!/bin/bash
# Shared memory of loops of one or two blocks (bf16, causal, cap 50, B1 H8/4):
# T64 and T96 with 64-row blocks, against T1024. Usage, from the repository
# root, with TRITON_PYTHON a Python that has triton 3.6.0:
#   results/cpu-2026-12-02-smem-bound/short.sh OUTDIR
OUT=$1; P=results/cpu-2026-12-01-compile-probe; S=results/cpu-2026-12-02-smem-bound; mkdir -p $OUT
run() { local t=$1 d=$2 f=$3 v=$4; local o=$OUT/t$t-d$d-$(echo $f$v | tr -dc '0-9,' | tr , _)
  .venv/bin/python -P $P/dump_ttir.py $o 1,$t,8,4,$d bfloat16 default "$v" "$f" > $o.dump.log 2>&1
  echo "T$t D$d fwd $f vjp $v: $($TRITON_PYTHON $S/shared.py $o | tr '\n' ' ')"; }
F='{"block_q":64,"block_k":64,"num_warps":4,"num_stages":2}'
V='{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":4,"num_stages":3}'
V1='{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":4,"num_stages":1}'
for t in 64 96 1024; do run $t 512 "$F" "$V1"; run $t 256 "$F" "$V"; done
