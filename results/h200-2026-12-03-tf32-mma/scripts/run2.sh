# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
# tests/test_series.py with the final series (its bitwise comparisons on a
# GPU) beside `verify` of the packed-document variants in bf16.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${TEST_LIMIT:-500} python3 -m pytest -n 10 -q -rfE -p no:cacheprovider --junitxml=$OUT/series.xml tests/test_series.py > $OUT/test-series.log 2>&1 &
t timeout -s INT ${VERIFY_LIMIT:-480} python3 -m tokamax_softcap verify --dtype bfloat16 --variants packed-k-start,packed-dense > $OUT/verify.log 2> $OUT/verify.err &
wait
cat $OUT/gpu.txt $OUT/rc.txt; tail -4 $OUT/test-series.log; cat $OUT/verify.log; tail -2 $OUT/verify.err
