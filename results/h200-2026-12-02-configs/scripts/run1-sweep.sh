# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; python3 -c "import jax, triton; print(jax.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1; sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
timeout -s INT 500 python3 -P results/h200-2026-12-02-configs/scripts/sweep.py $OUT/sweep.jsonl > $OUT/sweep.log 2>&1; rc=$?; echo "sweep rc $rc $(( $(date +%s) - S ))s" >> $OUT/rc.txt
cat $OUT/rc.txt; head -1 $OUT/sweep.jsonl; grep -c ms $OUT/sweep.jsonl; grep -c error $OUT/sweep.jsonl
