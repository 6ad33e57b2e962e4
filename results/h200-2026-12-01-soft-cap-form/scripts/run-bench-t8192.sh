python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
timeout -s INT 140 python3 -m tokamax_softcap bench --seq-lens 8192 --head-dims 128,256 --heads gqa,mha --masks causal --impls ours,ours-nocap,mosaic,xla --out $OUT/bench > $OUT/bench.log 2>&1; echo "bench rc $?"
cat $OUT/bench/bench.md
