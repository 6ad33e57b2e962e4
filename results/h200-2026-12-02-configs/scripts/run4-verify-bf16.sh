# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run4.sha256
s=$(date +%s); timeout -s INT 150 python3 -m tokamax_softcap verify --config pr-check --dtype bfloat16 --variants causal,bias,window --json $OUT/verify-bf16-pr-check.json > $OUT/verify-bf16-pr-check.log 2>&1; rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: verify --config pr-check --dtype bfloat16 --variants causal,bias,window" > $OUT/rc-run4.txt
cat $OUT/rc-run4.txt; grep -v "it/s\|s/it\|%|" $OUT/verify-bf16-pr-check.log | tail -n 12 | cut -c1-300
