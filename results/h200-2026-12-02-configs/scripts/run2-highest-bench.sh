# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s); sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run2.sha256
timeout -s INT 150 python3 -P results/h200-2026-12-02-configs/scripts/sweep.py $OUT/highest.jsonl 64,128 causal,full highest > $OUT/highest.log 2>&1; rc=$?; echo "highest rc $rc $(( $(date +%s) - S ))s" >> $OUT/rc-run2.txt
s=$(date +%s); L=$(( 570 - s + S )); timeout -s INT $L python3 -m tokamax_softcap bench --seq-lens 4096 --impls ours,ours-nocap,mosaic,xla --out /tmp/bench-t4096 > /tmp/bench-t4096.log 2>&1; rc=$?; echo "bench-t4096 rc $rc $(( $(date +%s) - s ))s limit $L" >> $OUT/rc-run2.txt
tar czf $OUT/bench-t4096.tgz -C /tmp bench-t4096 bench-t4096.log
cat $OUT/rc-run2.txt; grep -v '"error"' $OUT/highest.jsonl; grep '"error"' $OUT/highest.jsonl | cut -c1-250; head -16 /tmp/bench-t4096/bench.md
