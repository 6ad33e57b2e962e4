python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(date +%s) $(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
t timeout -s INT 250 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '14', '-rfE', '-p', 'no:cacheprovider', '-k', u.SERIES_TESTS)
print(r.stdout[-6000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1
t timeout -s INT 320 python3 -m pytest -n 14 -q -rfE -p no:cacheprovider tests/test_upstream_suite_soft_cap.py --junitxml=$OUT/upstream-soft-cap.xml > $OUT/upstream-soft-cap.log 2>&1
cat $OUT/rc.txt; grep "passed\|failed" $OUT/series-tests.log | tail -3; tail -n 5 $OUT/upstream-soft-cap.log | cut -c1-300
