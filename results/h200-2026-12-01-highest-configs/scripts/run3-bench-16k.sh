python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
s=$(date +%s); timeout -s INT 500 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 16384 --out /tmp/bench-16k > /tmp/bench-16k.log 2>&1; echo "bench-16k rc $? $(( $(date +%s) - s ))s limit 500" >> $OUT/rc.txt
cp /tmp/bench-16k.log /tmp/bench-16k/ 2>/dev/null; tar czf $OUT/bench-16k.tgz -C /tmp bench-16k bench-16k.log
cat $OUT/rc.txt; head -30 /tmp/bench-16k/bench.md; tail -3 /tmp/bench-16k.log
