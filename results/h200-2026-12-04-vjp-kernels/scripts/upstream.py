"""Uncapped head_dim 256: tokamax 0.0.17's own Pallas-Triton op against ours.

python -P upstream.py OUT.json

Issue 12's target "uncapped head_dim 256 at least 1.5x faster than
tokamax's default". bf16, no cap, forward + VJP and forward alone, through
bench's timing (`bench._time`: CUPTI, 20 rounds over 4 input sets):
tokamax's unpatched `PallasTritonFlashAttention()` (its default configs and
VJP) and this package's op (`ours-nocap`), in one run.
"""
import json, sys
import jax
from tokamax._src.ops.attention import pallas_triton as upstream
import tokamax_softcap
from tokamax_softcap import bench

IMPLS = {"tokamax": upstream.PallasTritonFlashAttention(),
         "ours-nocap": tokamax_softcap.PallasTritonFlashAttention()}
shapes = [bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask=m)
          for m in ("causal", "full")]
shapes.append(bench.Shape(seq_len=4096, head_dim=256, heads="mha", mask="causal"))
rows = []
for shape in shapes:
  sets = bench._inputs(shape, jax.numpy.bfloat16, bench.INPUT_SETS)  # pylint: disable=protected-access
  for name, op in IMPLS.items():
    r = dict(shape=str(shape), implementation=name)
    try:
      for mode in ("fwd", "fwd+bwd"):
        r[mode + "_ms"] = round(bench._time(op, {}, shape, mode, sets, bench.REPS)[0], 4)  # pylint: disable=protected-access
    except Exception as e:  # pylint: disable=broad-except
      r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
    print(json.dumps(r), flush=True)
    rows.append(r)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
