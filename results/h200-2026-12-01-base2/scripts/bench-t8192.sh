python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)" >> $OUT/gpu.txt 2>&1
mkdir -p /tmp/base && git archive b8e623f | tar -x -C /tmp/base
s=$(date +%s); timeout -s INT 340 python3 -m tokamax_softcap bench --seq-lens 8192 --impls ours,ours-nocap,mosaic,xla --out /tmp/new > /tmp/new.log 2>&1; echo "new rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/new.log /tmp/new/ 2>/dev/null
s=$(date +%s); (cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout -s INT 200 python3 -m tokamax_softcap bench --seq-lens 8192 --impls ours,ours-nocap --out /tmp/base-bench > /tmp/base-bench.log 2>&1); echo "base rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/base-bench.log /tmp/base-bench/ 2>/dev/null
tar czf $OUT/bench.tgz -C /tmp new base-bench
cat $OUT/rc.txt; cat /tmp/new/bench.md | head -40; cat /tmp/base-bench/bench.md | head -20; tail -3 /tmp/new.log /tmp/base-bench.log
