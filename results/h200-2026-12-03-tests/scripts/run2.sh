# On one H200, side by side: the eight cases of upstream's attention suite
# with a cap that run 1's limit cut and the API, argument, transform and
# wide-head tests; upstream's tests of the series with patch 0025's TF32
# term; the compile grid of h200-2026-12-03-smem-vjp with that term.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
S=tests/test_upstream_suite_soft_cap.py::PallasTritonFlashAttentionSoftCapSuiteTest
t timeout -s INT 480 python3 -m pytest -q -n 6 -rfE -p no:cacheprovider --junitxml=$OUT/rest.xml \
  $S::test_quantized_int40 $S::test_quantized_int41 $S::test_quantized_int42 $S::test_small_sequences1 \
  $S::test_small_sequences3 $S::test_tanh_clipping0 $S::test_vmap1 $S::test_vmap4 \
  tests/test_api.py tests/test_arguments.py tests/test_transforms.py tests/test_wide_heads.py > $OUT/rest.log 2>&1 &
python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
t timeout -s INT 480 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '5', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
t timeout -s INT 480 python3 -P results/h200-2026-12-03-smem-vjp/scripts/compile_grid.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1
wait
cat $OUT/gpu.txt $OUT/rc.txt; tail -n 2 $OUT/compile-grid.log
for f in $OUT/rest.log $OUT/series-tests.log; do echo "== $f"; grep -E "passed|failed|FAILED|ERROR" $f | tail -n 8 | cut -c1-300; done
