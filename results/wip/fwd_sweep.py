"""Times Mosaic GPU's sm90 forward over its autotuning configs (H200)."""
import dataclasses, json, os, sys, time
import jax, jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import bench

shapes = [
    bench.Shape(seq_len=8192, head_dim=128, heads="mha", mask="causal", batch=2),
    bench.Shape(seq_len=8192, head_dim=128, heads="mha", mask="window-4096", batch=2),
    bench.Shape(seq_len=8192, head_dim=128, heads="gqa-32/16", mask="causal", batch=2),
    bench.Shape(seq_len=8192, head_dim=256, heads="gqa-16/8", mask="causal", batch=2),
    bench.Shape(seq_len=8192, head_dim=64, heads="gqa-16/8", mask="causal", batch=2),
]
if len(sys.argv) > 1:
  shapes = [s for s in shapes if any(a in str(s) for a in sys.argv[1:])]
rows = []
deadline = time.time() + float(os.environ.get("SWEEP_SECONDS", 250))
for shape in shapes:
  sets = bench._inputs(shape, jnp.bfloat16, 2)
  op = tokamax_softcap.PallasMosaicGpuFlashAttention()
  q, k, v = sets[0]
  ba = op.bind(q, k, v, logits_soft_cap=bench.CAP, **shape.mask_kwargs())
  heur = op._get_heuristics_config(ba)
  configs = [heur] + sorted(op._get_autotuning_configs(ba) - {heur}, key=str)
  base = None
  for name, o, kw in [("cudnn-nocap", bench.CudnnNoCap(), {})] + [
      (str(c), op.replace(config=c), dict(logits_soft_cap=bench.CAP)) for c in configs]:
    if time.time() > deadline:
      break
    try:
      ms, _ = bench._time(o, kw, shape, "fwd", sets, 10)
    except Exception as e:
      ms = None; print(shape, name, "ERR", str(e).splitlines()[0][:120], flush=True)
    flop = shape.fwd_flop()
    print(f"{shape} | {name} | {ms and round(ms, 3)} ms | "
          f"{ms and round(flop / ms / 1e9)} TFLOP/s", flush=True)
    rows.append(dict(shape=str(shape), config=name, ms=ms))
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "fwd_sweep.json"), "w"), indent=1)
