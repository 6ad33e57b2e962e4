"""Checks the one-pass kernel's dq, dk, dv against an fp32 XLA reference.

`python check.py [--interpret]`: on the GPU, or in Mosaic GPU's interpreter
on a CPU (`--interpret`, tiny shapes). Exits 1 if any variant's errors are
not within bf16 bounds; prints the errors. `python check.py --vs-triton`:
our Triton VJP's errors beside the one-pass VJP's, on a CPU.
"""
import dataclasses
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
from tokamax_softcap import reference as reference_lib

import one_pass_vjp as opv

CAP = 50.0


def reference(q, k, v, cap, causal, scale, window=None):
  """Returns fp32 `(out, (m, l))`, the logits from `tokamax_softcap.reference`."""
  t = q.shape[1]
  u = reference_lib.logits(q, k, logits_scale=scale)
  s = u if cap is None else cap * jnp.tanh(u / cap)
  if causal:
    i, j = jnp.arange(t)[:, None], jnp.arange(t)[None, :]
    keep = (j <= i) if window is None else (j <= i) & (j > i - window)
    s = jnp.where(keep, s, -jnp.inf)
  m = s.max(-1)
  l = jnp.exp(s - m[..., None]).sum(-1)
  p = jnp.exp(s - m[..., None]) / l[..., None]
  v = jnp.repeat(v, q.shape[2] // v.shape[2], axis=2)
  return jnp.einsum("bhqk,bkhd->bqhd", p, v), (m, l)


def check(shape, variant, cap, interpret, seed=0, window=None):
  b, t, h, hk, d = shape
  keys = jax.random.split(jax.random.PRNGKey(seed), 4)
  scale = 1 / math.sqrt(d)
  q = (math.sqrt(CAP) * jax.random.normal(keys[0], (b, t, h, d))).astype(jnp.bfloat16)
  k = (math.sqrt(CAP) * jax.random.normal(keys[1], (b, t, hk, d))).astype(jnp.bfloat16)
  v = jax.random.normal(keys[2], (b, t, hk, d)).astype(jnp.bfloat16)
  dout = jax.random.normal(keys[3], (b, t, h, d)).astype(jnp.bfloat16)
  f32 = lambda x: x.astype(jnp.float32)
  f = lambda q, k, v: reference(q, k, v, cap, True, scale, window)[0]
  out, vjp = jax.vjp(f, f32(q), f32(k), f32(v))
  grads = vjp(f32(dout))
  _, (m, l) = reference(f32(q), f32(k), f32(v), cap, True, scale, window)
  delta = jnp.einsum("bqhd,bqhd->bhq", out.astype(jnp.bfloat16).astype(jnp.float32), f32(dout))
  got = jax.jit(lambda *a: opv.one_pass_vjp(
      *a, logits_scale=scale, logits_soft_cap=cap, is_causal=True,
      window_size=window, variant=variant, interpret=interpret))(
          q, k, v, opv.residuals_to_lse2(m, l), delta, dout)
  errs = []
  for name, g, r in zip(("dq", "dk", "dv"), got, grads):
    g = np.asarray(f32(g)); r = np.asarray(r)
    if not np.isfinite(g).all():
      return False, f"{name} not finite"
    errs.append(float(np.abs(g - r).max() / (np.abs(r).max() + 1e-30)))
  # bf16 outputs and bf16 dot operands: 2^-8 relative is one rounding; the
  # gradients sum many rounded terms, 3e-2 of the max is a bf16 bound.
  return all(e < 3e-2 for e in errs), " ".join(f"{n} {e:.2e}" for n, e in zip(("dq", "dk", "dv"), errs))


def versus_triton(seeds=3):
  """Prints errors of our Triton VJP and the one-pass VJP on the same inputs.

  In the interpreter on a CPU, B1 T512 4/2 heads, head_dim 64, causal, cap
  50: both VJPs take the residuals and `out` of the Triton forward.
  """
  import tokamax_softcap  # pylint: disable=g-import-not-at-top
  from tokamax_softcap import interpret  # pylint: disable=g-import-not-at-top

  b, t, h, hk, d = 1, 512, 4, 2, 64
  scale = d**-0.5
  f32 = lambda x: x.astype(jnp.float32)
  err = lambda g, r: float(jnp.abs(f32(g) - r).max() / jnp.abs(r).max())
  op = tokamax_softcap.PallasTritonFlashAttention()
  f = lambda q, k, v, **kw: op(q, k, v, is_causal=True, logits_soft_cap=CAP, **kw)
  variant = opv.Variant(fold_cap=True, shared_dq=True, a_from_smem=True)
  for seed in range(seeds):
    keys = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = (math.sqrt(CAP) * jax.random.normal(keys[0], (b, t, h, d))).astype(jnp.bfloat16)
    k = (math.sqrt(CAP) * jax.random.normal(keys[1], (b, t, hk, d))).astype(jnp.bfloat16)
    v = jax.random.normal(keys[2], (b, t, hk, d)).astype(jnp.bfloat16)
    dout = jax.random.normal(keys[3], (b, t, h, d)).astype(jnp.bfloat16)
    ref = jax.vjp(lambda *a: reference(*a, CAP, True, scale)[0], f32(q), f32(k), f32(v))[1](f32(dout))
    with interpret.interpret():
      triton = jax.jit(jax.vjp(jax.jit(f), q, k, v)[1])(dout)
      out, (m, l) = jax.jit(lambda *a: f(*a, return_residuals=True))(q, k, v)
    delta = jnp.einsum("bqhd,bqhd->bhq", f32(out), f32(dout))
    one_pass = jax.jit(lambda *a: opv.one_pass_vjp(
        *a, logits_scale=scale, logits_soft_cap=CAP, is_causal=True,
        variant=variant, interpret=True))(
            q, k, v, opv.residuals_to_lse2(m, l), delta, dout)
    fmt = lambda gs: " ".join(f"{err(g, r):.2e}" for g, r in zip(gs, ref))
    print(f"seed {seed}: dq/dk/dv Triton VJP {fmt(triton)}, one-pass {fmt(one_pass)}", flush=True)


if __name__ == "__main__":
  if "--vs-triton" in sys.argv:
    versus_triton()
    sys.exit(0)
  interpret = "--interpret" in sys.argv
  shape = (1, 256, 2, 1, 64) if interpret else (2, 1024, 4, 2, 128)
  ok_all = True
  variants = [opv.Variant(), opv.Variant(fold_cap=True),
              opv.Variant(fold_cap=True, shared_dq=True)]
  if interpret:
    variants = [dataclasses.replace(v, a_from_smem=True) for v in variants]
  for variant in variants:
    for cap in (CAP, None):
      ok, msg = check(shape, variant, cap, interpret)
      ok_all &= ok
      print(f"{variant.name():40s} cap={cap}: {'ok' if ok else 'FAIL'} {msg}", flush=True)
  # Windows that end inside a block, on a block's edge, and past the tile.
  for window in (shape[1] // 4 + 3, shape[1] // 4, shape[1] // 2 + 64):
    ok, msg = check(shape, variants[-1], CAP, interpret, window=window)
    ok_all &= ok
    print(f"{variants[-1].name():40s} window={window}: {'ok' if ok else 'FAIL'} {msg}", flush=True)
  sys.exit(0 if ok_all else 1)
