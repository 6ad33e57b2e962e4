python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, triton; print(jax.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
V=causal,packed-k-start,bias,window
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(date +%s) $(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
# Phase A, correctness, side by side on the one GPU.
t timeout -s INT 380 python3 -m tokamax_softcap verify --config pr-check --dtype bfloat16 --variants $V --json $OUT/verify-bf16-pr-check.json > $OUT/verify-pr-check.log 2>&1 &
t timeout -s INT 380 python3 -m tokamax_softcap verify --config gemma2-2b --dtype bfloat16 --variants $V --json $OUT/verify-bf16-gemma2-2b.json > $OUT/verify-gemma2-2b.log 2>&1 &
t timeout -s INT 300 python3 -m pytest -n 5 -q -rfE -p no:cacheprovider tests/test_precision.py --junitxml=$OUT/test-precision.xml > $OUT/test-precision.log 2>&1 &
t timeout -s INT 300 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '6', '-rfE', '-p', 'no:cacheprovider', '-k', u.SERIES_TESTS)
print(r.stdout[-6000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
wait
# Phase B, timing alone.
t timeout -s INT 170 python3 -m tokamax_softcap bench --impls ours,ours-highest,ours-nocap --seq-lens 4096 --heads gqa --head-dims 64,128,256 --masks causal --out $OUT/bench-highest > $OUT/bench-highest.log 2>&1
cat $OUT/rc.txt; tail -n 30 $OUT/verify-pr-check.log | cut -c1-260; tail -n 30 $OUT/verify-gemma2-2b.log | cut -c1-260; tail -n 4 $OUT/test-precision.log | cut -c1-300; grep "passed\|failed" $OUT/series-tests.log | tail -3; cat $OUT/bench-highest/bench.md 2>/dev/null | head -20; tail -3 $OUT/bench-highest.log
