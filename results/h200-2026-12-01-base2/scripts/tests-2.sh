python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
[ -d /tmp/tk ] || python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
s=$(date +%s); timeout -s INT 190 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '12', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1; echo "series rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); timeout -s INT 170 python3 -m pytest -n 14 -q -rfE -p no:cacheprovider tests/test_upstream_suite_soft_cap.py --junitxml=$OUT/upstream-soft-cap.xml > $OUT/upstream-soft-cap.log 2>&1; echo "upstream soft cap rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); timeout -s INT 150 python3 -m pytest -n 14 -q -rfE -p no:cacheprovider tests/test_soft_cap.py tests/test_wide_heads.py tests/test_transforms.py --junitxml=$OUT/tests-rest.xml > $OUT/tests-rest.log 2>&1; echo "rest rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cat $OUT/rc.txt; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log | tail -8 | cut -c1-400; tail -n 3 $OUT/upstream-soft-cap.log | cut -c1-300; grep "FAILED\|ERROR" $OUT/tests-rest.log | head -20 | cut -c1-300; tail -n 3 $OUT/tests-rest.log | cut -c1-300
