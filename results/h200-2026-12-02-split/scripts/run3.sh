# The split's bound at other dtypes (rule.py), then bench at head_dim 256 and 512, patches 0001-0026, H200.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
s=$(date +%s); timeout -s INT 150 python3 -P results/h200-2026-12-02-split/scripts/rule.py $OUT/rule.jsonl > $OUT/rule.log 2>&1; echo "rule rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); timeout -s INT 220 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 8192 --head-dims 256 --out $OUT/bench-256 > $OUT/bench-256.log 2>&1; echo "bench-256 rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); timeout -s INT 150 python3 -m tokamax_softcap bench --impls ours,ours-nocap,xla --seq-lens 8192 --head-dims 512 --heads gqa --out $OUT/bench-512 > $OUT/bench-512.log 2>&1; echo "bench-512 rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cat $OUT/gpu.txt $OUT/rc.txt $OUT/rule.jsonl; cat $OUT/bench-256/*.md $OUT/bench-512/*.md 2>/dev/null | head -60; tail -3 $OUT/bench-512.log
