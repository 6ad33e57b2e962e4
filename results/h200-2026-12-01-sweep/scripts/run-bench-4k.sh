python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
s=$(date +%s); timeout -s INT 530 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 4096 --out /tmp/bench-4k > /tmp/bench-4k.log 2>&1; echo "rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/bench-4k.log /tmp/bench-4k/ 2>/dev/null; tar czf $OUT/bench-4k.tgz -C /tmp bench-4k
cat $OUT/rc.txt; cat /tmp/bench-4k/bench.md; tail -5 /tmp/bench-4k.log
