# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site. Patch 0025's bound against XLA's
# compiles, then `bench` at head_dim 512.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s); sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run1.sha256; nvidia-smi > $OUT/gpu.txt
timeout -s INT 300 python3 -P results/h200-2026-12-02-smem-bound/scripts/compile_grid.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1; rc=$?; echo "compile-grid rc $rc $(( $(date +%s) - S ))s" >> $OUT/rc-run1.txt
s=$(date +%s); L=$(( 570 - s + S )); timeout -s INT $L python3 -m tokamax_softcap bench --seq-lens 8192 --heads gqa --head-dims 512 --masks causal,full --impls ours,ours-nocap,xla --out $OUT/bench-d512 > $OUT/bench-d512.log 2>&1; rc=$?; echo "bench-d512 rc $rc $(( $(date +%s) - s ))s limit $L" >> $OUT/rc-run1.txt
cat $OUT/rc-run1.txt; tail -3 $OUT/compile-grid.log; grep '"consistent": false' $OUT/compile-grid.jsonl | cut -c1-300; cat $OUT/bench-d512/bench.md 2>/dev/null | head -12; tail -5 $OUT/bench-d512.log
