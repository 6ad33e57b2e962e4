# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site. `bench` at T2048 with patches
# 0001-0025 (0025 changes no kernel).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run4.sha256
s=$(date +%s); timeout -s INT 330 python3 -m tokamax_softcap bench --seq-lens 2048 --impls ours,ours-nocap,mosaic,xla --out $OUT/bench-2k > $OUT/bench-2k.log 2>&1; echo "$(( $(date +%s) - s ))s rc $?: bench --seq-lens 2048" > $OUT/rc-run4.txt
cat $OUT/rc-run4.txt; head -16 $OUT/bench-2k/bench.md
