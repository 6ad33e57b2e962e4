# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
# run1.sh's compile grid again with patch 0025's final bound (held tiles twice
# at short diagonal steps).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${GRID_LIMIT:-260} python3 -P results/h200-2026-12-03-smem-vjp/scripts/compile_grid.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1
cat $OUT/rc.txt; tail -1 $OUT/compile-grid.log
