"""Soft-cap variants (results/h200-2026-11-30-soft-cap-probes.md): speed and accuracy.

Run from the repository root with probe-0015.patch added to
tokamax_softcap/patches/ (it adds the `soft_cap` helper this script swaps):
  python probe.py speed OUT.json [VARIANTS]   # one GPU
  python probe.py acc OUT.json [VARIANTS]     # full-size verify rows, GPU
  python probe.py acc-cpu OUT.json [VARIANTS] # reduced size, interpreter
"""

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import tokamax_softcap
from tokamax_softcap import bench
from tokamax_softcap import patched
from tokamax_softcap import harness
from tokamax_softcap import verify

mod = patched.pallas_triton_vjp
NEW = mod.soft_cap


def libdevice(u, c):  # The series up to 0014.
  t = jnp.tanh(u.astype(jnp.float32) / c)
  return c * t, (1.0 - t) * (1.0 + t)


def libdevice_mul(u, c):
  t = jnp.tanh(u.astype(jnp.float32) * float(1.0 / c))
  return c * t, (1.0 - t) * (1.0 + t)


def exp2_signed(u, c):
  x = u.astype(jnp.float32) * float(2 * np.log2(np.e) / c)
  r = 2.0 / (jnp.exp2(x) + 1.0)
  return c * (1.0 - r), r * (2.0 - r)


def exp2_rsqrt(u, c):
  u = u.astype(jnp.float32)
  e = jnp.exp2(jnp.abs(u) * float(-2.0 * np.log2(np.e) / c))
  h = jax.lax.rsqrt(1.0 + e)
  r = h * h
  t = (1.0 - e) * r
  return c * jnp.where(u < 0.0, -t, t), 4.0 * e * r * r


def exp2_newton(u, c):
  u = u.astype(jnp.float32)
  e = jnp.exp2(jnp.abs(u) * float(-2.0 * np.log2(np.e) / c))
  x = 1.0 + e
  r = 24.0 / 17.0 - (8.0 / 17.0) * x
  for _ in range(3):
    r = r + r * (1.0 - x * r)
  t = (1.0 - e) * r
  return c * jnp.where(u < 0.0, -t, t), 4.0 * e * r * r


VARIANTS = dict(
    exp2=NEW,
    libdevice=libdevice,
    libdevice_mul=libdevice_mul,
    exp2_signed=exp2_signed,
    exp2_rsqrt=exp2_rsqrt,
    exp2_newton=exp2_newton,
)
if len(sys.argv) > 3:
  VARIANTS = {k: VARIANTS[k] for k in sys.argv[3].split(",")}
which = sys.argv[1]
out = sys.argv[2]
res = []


def emit(r):
  print(json.dumps(r), flush=True)
  res.append(r)
  json.dump(res, open(out, "w"), indent=1)


ours = tokamax_softcap.PallasTritonFlashAttention
SHAPES = [
    bench.Shape(
        seq_len=4096, head_dim=128, heads="mha", mask="causal", batch=4
    ),
    bench.Shape(
        seq_len=8192, head_dim=256, heads="gqa", mask="causal", batch=2
    ),
]
if which == "speed":
  sets = {s: bench._inputs(s, jnp.bfloat16, 2) for s in SHAPES}
  for rnd in range(1):
    for s in SHAPES:
      for mode in ("fwd", "fwd+bwd"):
        ms, _ = bench._time(ours(), None, s, mode, sets[s], 30)
        emit(dict(round=rnd, shape=str(s), mode=mode, variant="nocap", ms=ms))
      for name, f in VARIANTS.items():
        mod.soft_cap = f
        jax.clear_caches()
        for mode in ("fwd", "fwd+bwd"):
          ms, _ = bench._time(ours(), bench.CAP, s, mode, sets[s], 30)
          emit(dict(round=rnd, shape=str(s), mode=mode, variant=name, ms=ms))
else:
  for name, f in VARIANTS.items():
    mod.soft_cap = f
    jax.clear_caches()
    for cfg, variant, dtype in [
        (harness.PR_CHECK, "causal", "float32"),
        (harness.GEMMA2_2B, "causal", "float32"),
    ]:
      if which == "acc-cpu":
        cfg = harness.cpu_sized(cfg)
      t0 = time.time()
      if which == "acc-cpu":
        from tokamax_softcap import interpret

        with interpret.interpret():
          row = verify.verify_one(cfg, variant, dtype)
      else:
        row = verify.verify_one(cfg, variant, dtype)
      emit(
          dict(
              variant=name,
              config=cfg.name,
              mask=variant,
              dtype=dtype,
              errors=row.errors,
              max_logit=row.max_logit,
              s=time.time() - t0,
          )
      )
