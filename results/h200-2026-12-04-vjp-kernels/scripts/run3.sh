# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${LIMIT:-500} python3 -P results/h200-2026-12-04-vjp-kernels/scripts/upstream.py $OUT/upstream.json > $OUT/upstream.log 2>&1
cat $OUT/gpu.txt $OUT/rc.txt; grep -v WARNING $OUT/upstream.log | tail -12
