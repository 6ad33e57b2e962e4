python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
for c in pr-check gemma2-2b; do timeout -s INT 200 python3 -m tokamax_softcap verify --config $c --dtype bfloat16 --variants packed-dense --json $OUT/verify-bf16-$c-packed-dense.json > $OUT/verify-$c-packed-dense.log 2>&1 & done; wait
for c in pr-check gemma2-2b; do grep "^|\|passed" $OUT/verify-$c-packed-dense.log; done
