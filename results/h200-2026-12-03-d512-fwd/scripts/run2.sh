# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
# `bench` alone first (timings), then the tests and `verify` side by side.
t timeout -s INT 200 python3 -m tokamax_softcap bench --impls ours,ours-nocap,xla --seq-lens 8192 --head-dims 512 --heads gqa --out $OUT/bench-512 > $OUT/bench-512.log 2>&1
python3 -m tokamax_softcap patch tree /tmp/tk > /dev/null
t timeout -s INT 330 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '6', '-rfE', '-p', 'no:cacheprovider', '-k', f'({u.SERIES_TESTS}) and (wide_heads or shared_memory or heuristics)')
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
t timeout -s INT 330 python3 -m pytest -q -n 3 -p no:cacheprovider tests/test_wide_heads.py > $OUT/wide-tests.log 2>&1 &
t timeout -s INT 330 python3 -m tokamax_softcap verify --config wide-512 --dtype bfloat16 --variants causal,window --json $OUT/verify-bf16-wide-512.json > $OUT/verify-bf16-wide-512.log 2>&1 &
wait
cat $OUT/gpu.txt $OUT/rc.txt; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log $OUT/wide-tests.log | tail -8 | cut -c1-400
grep -v "it/s\|s/it\|%|" $OUT/bench-512.log | tail -n 12 | cut -c1-250
grep -v "it/s\|s/it\|%|" $OUT/verify-bf16-wide-512.log | tail -n 12 | cut -c1-250
