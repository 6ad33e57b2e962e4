"""GPU: fwd+bwd kernel time of the VJP's weights as `exp2(s log2e - lse2)`.

Against the series as the package runs it; `bench`'s timing (CUPTI), B4
T4096 causal bf16, capped and not, three rounds in turn. LSE_DIR as for
`lse_acc.py`.

python3 -P results/cpu-2026-12-01-lse-fold/lse_time.py LSE_DIR > lse_time.jsonl
"""
import json
import sys
import jax.numpy as jnp
from tokamax_softcap import bench, patched


def op(modules):
  vjp = modules["pallas_triton_vjp"].PallasTritonFlashAttentionVjp()
  return modules["pallas_triton"].PallasTritonFlashAttention(vjp=vjp)


ops = {
    "now": op(patched.load_modules(
        "now", lambda m: (patched.patched_source(m), f"<now {m}>"))),
    "lse": op(patched.load_modules(
        "lse", lambda m: (open(f"{sys.argv[1]}/{m}.py").read(), f"<lse {m}>"))),
}
shapes = [
    bench.Shape(seq_len=4096, head_dim=d, heads=h, mask="causal", batch=4)
    for d, h in ((64, "gqa"), (128, "gqa"), (256, "gqa"), (128, "mha"))
]
for round_ in range(3):
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)  # pylint: disable=protected-access
    for cap in (bench.CAP, None):
      for name, attention in ops.items():
        ms, _ = bench._time(attention, cap, shape, "fwd+bwd", sets, 20)  # pylint: disable=protected-access
        print(json.dumps(dict(round=round_, shape=str(shape), cap=cap,
                              variant=name, ms=ms)), flush=True)
