# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
# f32 VJP configs whose loaded tiles have more rows than their dots.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${GRID_LIMIT:-200} python3 -P results/h200-2026-12-03-tf32-mma/scripts/compile_grid_wide_rows.py $OUT/compile-grid.jsonl > $OUT/compile-grid.log 2>&1
cat $OUT/rc.txt; tail -1 $OUT/compile-grid.log
