# Tests with patches 0001-0026 (final form of 0026) on the H200: upstream's
# tests of the series, tests/test_wide_heads.py, and f32 `verify` of gemma2-2b.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
t timeout -s INT 560 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
t timeout -s INT 560 python3 -m pytest -q -n 3 -p no:cacheprovider tests/test_wide_heads.py > $OUT/wide-tests.log 2>&1 &
t timeout -s INT 560 python3 -m tokamax_softcap verify --config gemma2-2b --dtype float32 --json $OUT/verify-f32-gemma2-2b.json > $OUT/verify-f32-gemma2-2b.log 2>&1 &
wait
cat $OUT/gpu.txt $OUT/rc.txt; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log $OUT/wide-tests.log | tail -8 | cut -c1-400
for f in $OUT/verify-*.log; do echo "== $f"; grep -v "it/s\|s/it\|%|" $f | tail -n 16 | cut -c1-250; done
