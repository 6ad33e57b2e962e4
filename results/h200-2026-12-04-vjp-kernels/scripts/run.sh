# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
# Usage: bash run.sh SCRIPT OUTFILE [ARGS], e.g. `sweep.py sweep.jsonl
# 512,256`: runs this folder's SCRIPT with $OUT/OUTFILE and ARGS, its log in
# $OUT/SCRIPT's name .log.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
script=$1 outfile=$2; shift 2; log=$OUT/${script%.py}.log
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${LIMIT:-540} python3 -P results/h200-2026-12-04-vjp-kernels/scripts/$script $OUT/$outfile "$@" > $log 2>&1
cat $OUT/gpu.txt $OUT/rc.txt; grep -v WARNING $log | grep -v '"ms"' | tail -20
