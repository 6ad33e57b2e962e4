#!/bin/bash
# Shared memory, registers and spills of 8 forward / VJP config pairs, bf16,
# at the default precision and at HIGHEST (sweep-d256.log).
# Usage, from the repository root, with TRITON_PYTHON a Python that has
# triton 3.6.0 installed:
#   results/cpu-2026-12-01-compile-probe/sweep.sh OUTDIR 1,1024,8,4,256
OUT=$1; SHAPE=$2
FWD=('{"block_q":128,"block_k":64,"num_warps":8,"num_stages":2}' '{"block_q":64,"block_k":64,"num_warps":4,"num_stages":2}' '{"block_q":64,"block_k":64,"num_warps":8,"num_stages":2}' '{"block_q":64,"block_k":32,"num_warps":4,"num_stages":2}' '{"block_q":128,"block_k":32,"num_warps":8,"num_stages":2}' '{"block_q":64,"block_k":64,"num_warps":4,"num_stages":3}' '{"block_q":128,"block_k":64,"num_warps":8,"num_stages":1}' '{"block_q":64,"block_k":32,"num_warps":8,"num_stages":2}')
VJP=('{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":8,"num_stages":2}' '{"block_m1":32,"block_n1":64,"block_m2":64,"block_n2":32,"num_warps":8,"num_stages":2}' '{"block_m1":32,"block_n1":64,"block_m2":64,"block_n2":32,"num_warps":4,"num_stages":2}' '{"block_m1":32,"block_n1":32,"block_m2":32,"block_n2":32,"num_warps":4,"num_stages":2}' '{"block_m1":32,"block_n1":32,"block_m2":32,"block_n2":32,"num_warps":8,"num_stages":2}' '{"block_m1":16,"block_n1":64,"block_m2":64,"block_n2":16,"num_warps":4,"num_stages":2}' '{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":8,"num_stages":1}' '{"block_m1":32,"block_n1":128,"block_m2":128,"block_n2":32,"num_warps":8,"num_stages":2}')
run() { local i=$1 p=$2; local d=$OUT/$p-$i; 
  timeout 300 .venv/bin/python -P results/cpu-2026-12-01-compile-probe/dump_ttir.py $d $SHAPE bfloat16 $p "${VJP[$i]}" "${FWD[$i]}" > /dev/null 2>&1
  echo "== $p fwd ${FWD[$i]} vjp ${VJP[$i]}" > $d/report.txt
  timeout 600 $TRITON_PYTHON results/cpu-2026-12-01-compile-probe/compile_ttir.py $d >> $d/report.txt 2>&1; }
for i in 0 1 2 3 4 5 6 7; do run $i default & run $i highest; wait; done
cat $OUT/*/report.txt
