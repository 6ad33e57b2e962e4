# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site. Upstream's tests of the series
# (with patch 0025's), and `verify` of a head_dim 512 configuration
# (results/cpu-2026-11-30-f32-block-d/wide-512-config.diff), side by side.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s); sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run2.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc-run2.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > /tmp/tree.log 2>&1
t timeout -s INT 420 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
git apply results/cpu-2026-11-30-f32-block-d/wide-512-config.diff
t timeout -s INT 300 python3 -m tokamax_softcap verify --config wide-512 --dtype float32 --json $OUT/verify-wide-512-f32.json > $OUT/verify-wide-512-f32.log 2>&1
L=$(( 540 - $(date +%s) + S )); t timeout -s INT $L python3 -m tokamax_softcap verify --config wide-512 --dtype bfloat16 --precision highest --variants causal,bias,window --json $OUT/verify-wide-512-bf16.json > $OUT/verify-wide-512-bf16.log 2>&1
git checkout tokamax_softcap/harness.py
wait
cat $OUT/rc-run2.txt; tail -n 5 $OUT/series-tests.log; for f in $OUT/verify-wide-512-*.log; do grep -v "it/s\|s/it\|%|" $f | tail -n 14 | cut -c1-250; done
