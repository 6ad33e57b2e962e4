python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
(
  export CUDA_VISIBLE_DEVICES=0
  timeout -s INT 320 python3 -m pytest -n 12 -q -rfE -p no:cacheprovider tests/test_upstream_suite_soft_cap.py --junitxml=$OUT/upstream-soft-cap.xml > $OUT/upstream-soft-cap.log 2>&1; echo "upstream soft cap rc $?" >> $OUT/rc.txt
  timeout -s INT 230 python3 -m tokamax_softcap bench --seq-lens 4096 --head-dims 64,128,256 --heads gqa --masks causal --impls ours,ours-nocap,mosaic,xla --out $OUT/bench > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout -s INT 330 python3 -m pytest -n 10 -q -rfE -p no:cacheprovider tests --ignore=tests/test_upstream_suite.py --ignore=tests/test_upstream_suite_soft_cap.py --ignore=tests/test_series.py --junitxml=$OUT/tests.xml > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/rc.txt
  python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
  timeout -s INT 200 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '-k', u.SERIES_TESTS)
print(r.stdout[-6000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1; echo "series rc $?" >> $OUT/rc.txt
) &
wait
cat $OUT/rc.txt; tail -n 3 $OUT/upstream-soft-cap.log | cut -c1-300; tail -n 6 $OUT/tests.log | cut -c1-300; grep "passed\|failed" $OUT/series-tests.log | tail -3; cat $OUT/bench/bench.md 2>/dev/null | head -20; tail -3 $OUT/bench.log
