"""Patch 0025's bound for run 2's dv-only configs, on a CPU (sm90 assumed).

python -P dv_bound.py   (from the repository root)

`tiles_bytes` of the patched module with the dv kernel's loop: q and dout
loaded `step` rows a step, k alone held (`held` rows), the config's stages;
the dq- and dk-only rows with both held tiles, as the series counts them.
Prints each dv config's outcome on the H200 beside the bound, and any row
whose bound disagrees with its outcome (WRONG).
"""
import json, re
from unittest import mock
import jax
from tokamax_softcap import patched
V = patched.pallas_triton_vjp
P = (jax.lax.DotAlgorithmPreset.BF16_BF16_F32,)*2
rows = [json.loads(l) for l in open("results/h200-2026-12-04-vjp-kernels/run2/sweep.jsonl")]
with mock.patch.object(V.gpu_utils, "_compute_capability", return_value=9.0):
  for r in rows:
    if r["kind"] not in ("dv", "dk", "dq"):
      continue
    held, step, warps, stages = r["config"]
    d = r["head_dim"]; rb = 2*d
    if r["kind"] == "dv":
      held_bytes = held*rb
    else:
      held_bytes = held*2*rb
    b = V.tiles_bytes(num_stages=stages, num_warps=warps, steps=8192//step, rows=step,
        dot_rows=held, row_bytes=(rb, rb), held_bytes=held_bytes, overlapping=True,
        precisions=P, diagonal_rows=step//2)
    m = re.search(r"requested (\d+)", r.get("error",""))
    req = int(m[1]) if m else None
    ok = "ms" in r
    verdict = ("OK" if (ok and b <= 232448) or (not ok and b > 232448 and b <= req) else "WRONG")
    if r["kind"]=="dv" or verdict=="WRONG":
      print(r["kind"], d, r["config"], "compiled" if ok else f"failed {req}", "bound", b, verdict)
