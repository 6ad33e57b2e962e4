"""Issue 14's shape through `bench.run`: ours, ours-nocap and XLA (H200).

python -P target.py OUT.json

B1 T8192 H8/4 head_dim 512, bf16, cap 50, causal and without a mask; bench's
CUPTI timing (20 rounds over 4 input sets), every column of a row from this
run.
"""
import dataclasses, json, sys
from tokamax_softcap import bench

shapes = [bench.Shape(seq_len=8192, head_dim=512, heads="gqa", mask=m, batch=1)
          for m in ("causal", "full")]
results = []
for r in bench.run(shapes, ("ours", "ours-nocap", "xla")):
  print(r, flush=True)
  results.append(dataclasses.asdict(r))
json.dump(results, open(sys.argv[1], "w"), indent=1)
print(bench.table([bench.Result(**r) for r in results]))
