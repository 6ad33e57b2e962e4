python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
s=$(date +%s); timeout -s INT 480 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 8192 --out /tmp/bench-8k > /tmp/bench-8k.log 2>&1; echo "rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/bench-8k.log /tmp/bench-8k/ 2>/dev/null; tar czf $OUT/bench-8k.tgz -C /tmp bench-8k
cat $OUT/rc.txt; cat /tmp/bench-8k/bench.md; tail -5 /tmp/bench-8k.log
