# Runs 3 and 4: bench at T32768, head_dim 64 and 128 (run 4: DIMS=256 LIMIT=450) (patches 0001-0025), H200.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
s=$(date +%s); timeout -s INT ${LIMIT:-540} python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 32768 --head-dims ${DIMS:-64,128} --out $OUT/bench-32k > $OUT/bench.log 2>&1; echo "bench rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cat $OUT/gpu.txt $OUT/rc.txt; cat $OUT/bench-32k/bench.md; tail -3 $OUT/bench.log
