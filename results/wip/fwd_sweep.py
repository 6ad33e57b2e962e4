"""Forward config sweep of the Mosaic GPU forward (series), hd128 MHA, B2 T8192."""
import itertools
import sys
import time
import jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import bench, patched

sm90 = patched.pallas_mosaic_gpu.sm90
masks = sys.argv[1].split(",")
head_dim = int(sys.argv[2]) if len(sys.argv) > 2 else 128
heads = sys.argv[3] if len(sys.argv) > 3 else "mha"
deadline = time.time() + float(sys.argv[4] if len(sys.argv) > 4 else 400)
for mask in masks:
  shape = bench.Shape(seq_len=8192, head_dim=head_dim, heads=heads, mask=mask)
  inputs = bench._inputs(shape, jnp.bfloat16, 2)
  rows = []
  cfgs = [None] + [
      sm90.Config(block_q=bq, block_kv=bk, num_stages=ns, persistent=p)
      for bq, bk, ns, p in itertools.product(
          (64, 128), (64, 128, 256), (2, 3, 4), (False, True))
  ]
  for cfg in cfgs:
    if time.time() > deadline:
      print("deadline", flush=True)
      break
    op = tokamax_softcap.PallasMosaicGpuFlashAttention(config=cfg) if cfg else tokamax_softcap.PallasMosaicGpuFlashAttention()
    try:
      ms, _ = bench._time(op, dict(logits_soft_cap=50.0), shape, "fwd", inputs, reps=10)
    except Exception as e:  # pylint: disable=broad-exception-caught
      print(mask, cfg, "ERR", type(e).__name__, str(e)[:120], flush=True)
      continue
    tf = shape.fwd_flop() / ms / 1e9
    print(f"{mask} {head_dim} {cfg} {ms:.3f} ms {tf:.0f} TFLOP/s", flush=True)
