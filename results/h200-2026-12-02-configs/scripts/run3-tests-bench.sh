# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s); sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run3.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc-run3.txt; }
python3 -m tokamax_softcap patch tree /tmp/tk > /tmp/tree.log 2>&1
t timeout -s INT 300 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '9', '-rfE', '-p', 'no:cacheprovider', '--junitxml=$OUT/series.xml', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1 &
t timeout -s INT 280 python3 -m tokamax_softcap verify --config pr-check --dtype float32 --json /tmp/verify-f32-pr-check.json > /tmp/verify-f32-pr-check.log 2>&1 &
wait
s=$(date +%s); L=$(( 470 - s + S )); t timeout -s INT $L python3 -m tokamax_softcap bench --seq-lens 1024,2048 --impls ours,ours-nocap,mosaic,xla --out /tmp/bench-1k-2k > /tmp/bench-1k-2k.log 2>&1
cp /tmp/verify-f32-pr-check.* /tmp/bench-1k-2k.log /tmp/bench-1k-2k/ 2>/dev/null; tar czf $OUT/run3.tgz -C /tmp bench-1k-2k
cat $OUT/rc-run3.txt; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log | tail -8 | cut -c1-400
grep -v "it/s\|s/it\|%|" /tmp/verify-f32-pr-check.log | tail -n 16 | cut -c1-250; head -30 /tmp/bench-1k-2k/bench.md
