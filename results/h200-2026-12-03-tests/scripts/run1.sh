# Tests with patches 0001-0026 on one H200, two pytest runs side by side:
# upstream's attention suite with and without a cap, and the soft-cap,
# softmax-range, hard-input, mask-range and precision tests.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
LIMIT=${LIMIT:-530}
t timeout -s INT $LIMIT python3 -m pytest -q -n 7 -rfE -p no:cacheprovider \
  --junitxml=$OUT/upstream.xml tests/test_upstream_suite.py tests/test_upstream_suite_soft_cap.py > $OUT/upstream.log 2>&1 &
t timeout -s INT $LIMIT python3 -m pytest -q -n 7 -rfE -p no:cacheprovider \
  --junitxml=$OUT/rest.xml tests/test_soft_cap.py tests/test_softmax_range.py tests/test_hard_inputs.py \
  tests/test_mask_ranges.py tests/test_precision.py > $OUT/rest.log 2>&1 &
wait
cat $OUT/gpu.txt $OUT/rc.txt
for f in $OUT/upstream.log $OUT/rest.log; do echo "== $f"; grep -E "passed|failed|FAILED|ERROR" $f | tail -n 12 | cut -c1-300; done
