python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-f32.sha256
s=$(date +%s); timeout -s INT 470 python3 -m tokamax_softcap verify --config gemma2-2b --dtype float32 --json $OUT/verify-f32-gemma2-2b.json > $OUT/verify-f32-gemma2-2b.log 2>&1; rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: verify --config gemma2-2b --dtype float32" > $OUT/rc-f32.txt
cat $OUT/rc-f32.txt; grep -v "it/s\|s/it\|%|" $OUT/verify-f32-gemma2-2b.log | tail -n 14 | cut -c1-250
