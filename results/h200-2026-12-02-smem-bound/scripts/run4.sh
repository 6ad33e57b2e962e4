# On the GPU machine, from the repository root: OUT is the output folder;
# .whl/ holds wheels of the packages that machine lacks (this repository's
# dependencies), installed into /tmp/site. The forward's configs at head_dim
# 256 with the cap (B4 T4096 H16/16, bf16, cap 50, causal and full): at
# T8192 the cap cost the forward 1.22-1.24x there, against 1.03-1.12x at
# head_dim 128 (run 3).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series-run4.sha256
s=$(date +%s); timeout -s INT 220 python3 -P results/h200-2026-12-02-configs/scripts/sweep.py $OUT/fwd-d256.jsonl 256 causal,full fwd > $OUT/fwd-d256.log 2>&1; echo "$(( $(date +%s) - s ))s rc $?: sweep.py 256 causal,full fwd" > $OUT/rc-run4.txt
cat $OUT/rc-run4.txt; grep -v '"error"' $OUT/fwd-d256.jsonl | python3 -c "
import json, sys
rows = [r for r in map(json.loads, sys.stdin) if 'mask' in r]
for r in sorted(rows, key=lambda r: (r['mask'], r['mode'], r.get('ms', 0))):
  print(r['mask'], r['mode'], r['cap'], r['fwd'], r.get('ms'))" | head -60; grep -c '"error"' $OUT/fwd-d256.jsonl
