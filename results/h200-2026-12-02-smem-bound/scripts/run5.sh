# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site. The compile grid of run 1 again,
# with patch 0025's final bound recorded; its tests on the GPU.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run5.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc-run5.txt; }
t timeout -s INT 120 python3 -P results/h200-2026-12-02-smem-bound/scripts/compile_grid.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1
python3 -m tokamax_softcap patch tree /tmp/tk > /tmp/tree.log 2>&1
t timeout -s INT 100 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-p', 'no:cacheprovider', '-k', 'shared_memory')
print(r.stdout[-1500:], r.stderr[-500:])" > $OUT/tests.log 2>&1
cat $OUT/rc-run5.txt; tail -1 $OUT/compile-grid.log; tail -2 $OUT/tests.log
