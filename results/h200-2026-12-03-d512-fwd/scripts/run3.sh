# On the H200, from the repository root: OUT is the output folder; .whl/
# holds wheels of the packages that machine lacks, installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
# The series with `git am`, then upstream's tests of it.
t python3 -m tokamax_softcap patch tree /tmp/tk > $OUT/tree.log 2>&1
t timeout -s INT 470 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '-k', u.SERIES_TESTS)
print(r.stdout[-8000:], r.stderr[-2000:])" > $OUT/series-tests.log 2>&1
cat $OUT/gpu.txt $OUT/rc.txt $OUT/tree.log; grep "passed\|failed\|FAILED\|Error" $OUT/series-tests.log | tail -8 | cut -c1-400
