# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
# f32 configs whose TF32 dots run on mma against XLA's compiles, beside
# upstream's tests of the series.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > /tmp/tree.log 2>&1
t timeout -s INT ${TEST_LIMIT:-400} python3 -c "
from tokamax_softcap import upstream_tree as u
print('\n'.join(u.check('/tmp/tk')))
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-6000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
t timeout -s INT ${GRID_LIMIT:-300} python3 -P results/h200-2026-12-03-tf32-mma/scripts/compile_grid.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1
wait
cat $OUT/gpu.txt $OUT/rc.txt; tail -1 $OUT/compile-grid.log; tail -3 $OUT/series-tests.log
