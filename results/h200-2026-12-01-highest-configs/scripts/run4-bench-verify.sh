python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
s=$(date +%s); timeout -s INT 150 python3 -m tokamax_softcap bench --impls ours,ours-highest,xla --seq-lens 8192 --head-dims 256 --heads gqa --masks causal,full --out /tmp/bench-highest > /tmp/bench-highest.log 2>&1; echo "bench-highest rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); timeout -s INT 200 python3 -m tokamax_softcap verify --config gemma2-2b --dtype bfloat16 --variants causal,window --json $OUT/verify-bf16-gemma2-2b.json > $OUT/verify-gemma2-2b.log 2>&1; echo "verify rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/bench-highest.log /tmp/bench-highest/ 2>/dev/null; tar czf $OUT/bench-highest.tgz -C /tmp bench-highest
cat $OUT/rc.txt; cat /tmp/bench-highest/bench.md; tail -25 $OUT/verify-gemma2-2b.log
