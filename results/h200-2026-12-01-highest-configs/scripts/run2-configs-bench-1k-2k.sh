python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
S=$(date +%s); rm -f /tmp/highest.jsonl
s=$(date +%s); timeout -s INT 240 python3 -P results/h200-2026-12-01-highest-configs/scripts/highest_cfg.py /tmp/highest.jsonl > /tmp/highest.log 2>&1; echo "highest rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); L=$(( 575 - s + S )); timeout -s INT $L python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 1024,2048 --out /tmp/bench-1k-2k > /tmp/bench-1k-2k.log 2>&1; echo "bench-1k-2k rc $? $(( $(date +%s) - s ))s limit $L" >> $OUT/rc.txt
cp /tmp/highest.jsonl /tmp/highest.log $OUT/; cp /tmp/bench-1k-2k.log /tmp/bench-1k-2k/ 2>/dev/null; tar czf $OUT/bench-1k-2k.tgz -C /tmp bench-1k-2k bench-1k-2k.log
cat $OUT/rc.txt; grep -v '"error"' /tmp/highest.jsonl; grep '"error"' /tmp/highest.jsonl | cut -c1-250; head -60 /tmp/bench-1k-2k/bench.md
