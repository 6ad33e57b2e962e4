python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt 2>&1
S=$(date +%s)
s=$(date +%s); timeout -s INT 330 python3 -P results/h200-2026-12-01-highest-configs/scripts/highest_cfg.py /tmp/highest.jsonl > /tmp/highest.log 2>&1; echo "highest rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
s=$(date +%s); L=$(( 570 - s + S )); python3 -m tokamax_softcap patch tree /tmp/tk > /tmp/series.log 2>&1 && timeout -s INT $L python3 -c "import subprocess as sp; o = sp.run; f = open('/tmp/series.out', 'w'); sp.run = lambda *a, **k: o(*a, **{**k, 'capture_output': False, 'stdout': f, 'stderr': sp.STDOUT}); from tokamax_softcap import upstream_tree as u; u.run_upstream_test('/tmp/tk', '-q', '-n', '12', '-rfE', '-k', u.SERIES_TESTS)" >> /tmp/series.log 2>&1; echo "series rc $? $(( $(date +%s) - s ))s limit $L" >> $OUT/rc.txt
cat /tmp/series.out >> /tmp/series.log; cp /tmp/highest.jsonl /tmp/highest.log /tmp/series.log $OUT/ 2>/dev/null
cat $OUT/rc.txt; grep -v '"error"' /tmp/highest.jsonl | tail -40; grep '"error"' /tmp/highest.jsonl | cut -c1-250; tail -15 /tmp/series.log
