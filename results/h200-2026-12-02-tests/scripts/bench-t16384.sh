python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-bench.sha256
s=$(date +%s); timeout -s INT 400 python3 -m tokamax_softcap bench --seq-lens 16384 --impls ours,ours-nocap,mosaic,xla --out $OUT/bench-t16384 > $OUT/bench-t16384.log 2>&1; rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: bench --seq-lens 16384" > $OUT/rc-bench.txt
cat $OUT/rc-bench.txt; cat $OUT/bench-t16384/bench.md | head -40; tail -3 $OUT/bench-t16384.log
