# dq by relaxed atomic adds (relaxed.py), series with the WIP patch 0026, H200.
# At 097d40c (patches 0001-0025); later series have a patch 0026 of their own.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
cp results/h200-2026-12-02-derivative/scripts/0026-WIP-atomic-dq.patch tokamax_softcap/patches/
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
s=$(date +%s); timeout -s INT ${LIMIT:-540} python3 -P results/h200-2026-12-02-relaxed/scripts/relaxed.py $OUT/relaxed.jsonl > $OUT/relaxed.log 2>&1; echo "relaxed rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cat $OUT/gpu.txt $OUT/rc.txt; grep -v '"ms"' $OUT/relaxed.jsonl | head -30; tail -3 $OUT/relaxed.log
