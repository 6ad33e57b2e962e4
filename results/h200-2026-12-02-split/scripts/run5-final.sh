# Patch 0026 as amended last (one helper for the VJP's pallas_calls, two
# redundant guards removed): upstream's tests of it and of wide heads, H200.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
python3 -m tokamax_softcap patch tree /tmp/tk > /dev/null 2>&1
timeout -s INT 150 python3 -c "
from tokamax_softcap import upstream_tree as u
r = u.run_upstream_test('/tmp/tk', '-q', '-n', '8', '-rfE', '-p', 'no:cacheprovider', '-k', 'dv_kernel_of_its_own or bf16_head_dim_256 or wide_heads or vjp_heuristics')
print(r.stdout[-3000:], r.stderr[-1000:])" > $OUT/final-tests.log 2>&1; echo "rc $?" >> $OUT/final-tests.log
tail -5 $OUT/final-tests.log
