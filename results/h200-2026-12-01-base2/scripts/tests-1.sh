python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
(
  python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
  s=$(date +%s); timeout -s INT 200 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '4', '-rfE', '-p', 'no:cacheprovider', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1; echo "series rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
  s=$(date +%s); timeout -s INT 300 python3 -m pytest -n 5 -q -rfE -p no:cacheprovider tests/test_upstream_suite_soft_cap.py --junitxml=$OUT/upstream-soft-cap.xml > $OUT/upstream-soft-cap.log 2>&1; echo "upstream soft cap rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
) &
s=$(date +%s); timeout -s INT 545 python3 -m pytest -n 8 -q -rfE -p no:cacheprovider tests --ignore=tests/test_upstream_suite.py --ignore=tests/test_upstream_suite_soft_cap.py --ignore=tests/test_series.py --junitxml=$OUT/tests.xml > $OUT/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
wait
cat $OUT/gpu.txt $OUT/rc.txt; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log | tail -8 | cut -c1-400; tail -n 4 $OUT/upstream-soft-cap.log | cut -c1-300; grep "FAILED\|ERROR" $OUT/tests.log | head -20 | cut -c1-300; tail -n 3 $OUT/tests.log | cut -c1-300
