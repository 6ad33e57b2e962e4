"""Checks, then times, the one-pass VJP against both two-kernel VJPs.

`python spike.py`, on an H200 from this directory: the kernel's gradients
against an fp32 reference (`check.py`), and the composed op's; then, at B2
T8192, 16/16 heads, head_dim 128, causal, bf16, cap 50, Mosaic GPU's
forward alone and forward + backward with each VJP, timed by
`tokamax_softcap.bench` (CUPTI kernel time, median of 20 rounds of 4 input
sets), all in this one process. Backward ms = forward + backward - forward;
TFLOP/s in the 2.5x-forward convention.
"""
import dataclasses
import sys

import jax
import jax.numpy as jnp
from tokamax._src.ops.attention import pallas_mosaic_gpu as upstream_mosaic
import tokamax_softcap
from tokamax_softcap import bench

import check
import one_pass_vjp as opv

V = opv.Variant
VARIANTS = [
    V(fold_cap=True),
    V(fold_cap=True, memory_registers=24),
    V(fold_cap=True, memory_registers=24, shared_dq=True),
    V(fold_cap=True, memory_registers=24, compute_wgs=1),
    V(fold_cap=True, memory_registers=24, shared_dq=True, probe="nocap"),
    V(fold_cap=True, memory_registers=24, probe="nodqadd"),
    V(fold_cap=True, memory_registers=24, shared_dq=True, probe="nodqadd"),
    V(fold_cap=True, memory_registers=24, probe="nodq"),
]
CHECKED = VARIANTS[:4]


def rerun_spread(grad, args, reruns):
  """Returns `(reruns whose dq differs, max |difference| of dq, dk, dv)`.

  dq's reduce-adds land in the CTAs' order: the bitwise run-to-run spread.
  """
  first = grad(*args)
  diffs = [
      [float(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32)).max())
       for a, b in zip(grad(*args), first)]
      for _ in range(reruns)
  ]
  return sum(d[0] > 0 for d in diffs), [max(col) for col in zip(*diffs)]


def composed_check():
  """Gradients of Mosaic GPU's forward with the one-pass VJP vs fp32 XLA."""
  b, t, h, d = 2, 1024, 4, 128
  keys = jax.random.split(jax.random.PRNGKey(1), 4)
  q = (7 * jax.random.normal(keys[0], (b, t, h, d))).astype(jnp.bfloat16)
  k = (7 * jax.random.normal(keys[1], (b, t, h // 2, d))).astype(jnp.bfloat16)
  v = jax.random.normal(keys[2], (b, t, h // 2, d)).astype(jnp.bfloat16)
  op = upstream_mosaic.PallasMosaicGpuFlashAttention(vjp=opv.OnePassVjp(VARIANTS[2]))
  f = lambda q, k, v: op(q, k, v, is_causal=True, logits_soft_cap=50.0)
  r = lambda q, k, v: check.reference(q, k, v, 50.0, True, d**-0.5)[0]
  f32 = lambda x: x.astype(jnp.float32)
  # Under jit: the kernel's dq accumulator (`jax.new_ref`) is traced, not eager.
  dout = jax.random.normal(keys[3], q.shape).astype(q.dtype)
  grad = jax.jit(lambda *a: jax.vjp(f, *a[:3])[1](a[3]))
  got = grad(q, k, v, dout)
  differ, spread = rerun_spread(grad, (q, k, v, dout), 5)
  print(f"composed op: dq differs in {differ} of 5 reruns, by up to {spread[0]:.3e} (max |dq| {float(jnp.abs(f32(got[0])).max()):.3e})", flush=True)
  want = jax.vjp(r, f32(q), f32(k), f32(v))[1](f32(dout))
  errs = [float(jnp.abs(f32(g) - w).max() / jnp.abs(w).max()) for g, w in zip(got, want)]
  # The cap is active: capped and uncapped references differ.
  nocap = jax.vjp(lambda q, k, v: check.reference(q, k, v, None, True, d**-0.5)[0], f32(q), f32(k), f32(v))[1](f32(dout))
  active = float(jnp.abs(nocap[0] - want[0]).max() / jnp.abs(want[0]).max())
  ok = all(e < 3e-2 for e in errs) and active > 0.1
  print(f"composed op: {'ok' if ok else 'FAIL'} dq/dk/dv {errs[0]:.2e} {errs[1]:.2e} {errs[2]:.2e}; uncapped dq differs by {active:.2f}", flush=True)
  return ok


def time_vjps(shape, vjps):
  """Prints Mosaic GPU's forward time, then a row per `(name, vjp)`."""
  sets = bench._inputs(shape, jnp.bfloat16, bench.INPUT_SETS)
  capped = dict(logits_soft_cap=bench.CAP)
  mosaic = upstream_mosaic.PallasMosaicGpuFlashAttention
  flop = 2.5 * shape.fwd_flop()
  fwd_ms, _ = bench._time(mosaic(), capped, shape, "fwd", sets, bench.REPS)
  print(f"{shape}: Mosaic GPU forward {fwd_ms:.3f} ms", flush=True)
  print("| shape | VJP | fwd+bwd ms | bwd ms | bwd TFLOP/s |\n|---|---|---|---|---|", flush=True)
  for name, vjp in vjps:
    op = mosaic() if vjp is None else mosaic(vjp=vjp)
    try:
      fb, _ = bench._time(op, capped, shape, "fwd+bwd", sets, bench.REPS)
    except Exception as e:  # pylint: disable=broad-except
      print(f"| {shape} | {name} | error: {type(e).__name__}: {str(e)[:300]} |", flush=True)
      continue
    bwd = fb - fwd_ms
    print(f"| {shape} | {name} | {fb:.3f} | {bwd:.3f} | {flop / bwd / 1e9:.0f} |", flush=True)
  return sets


def main():
  print(jax.devices()[0].device_kind, jax.__version__, flush=True)
  ok = True
  for variant in CHECKED:
    for cap in (check.CAP, None):
      good, msg = check.check((2, 1024, 4, 2, 128), variant, cap, False)
      ok &= good
      print(f"check {variant.name():36s} cap={cap}: {'ok' if good else 'FAIL'} {msg}", flush=True)
  try:
    ok &= composed_check()
  except Exception as e:  # pylint: disable=broad-except
    ok = False
    print(f"composed op: error {type(e).__name__}: {str(e)[:300]}", flush=True)

  shape = bench.Shape(seq_len=8192, head_dim=128, heads="mha", mask="causal", batch=2)
  time_vjps(shape, [
      ("Mosaic GPU VJP (two kernels)", None),
      ("our Triton VJP (two kernels)", tokamax_softcap.PallasTritonFlashAttentionVjp()),
  ] + [(f"one-pass {v.name()}", opv.OnePassVjp(v)) for v in VARIANTS])
  sys.exit(0 if ok else 1)


def grid():
  """The best variant at other shapes, beside both two-kernel VJPs."""
  best = VARIANTS[2]
  print(jax.devices()[0].device_kind, jax.__version__, flush=True)
  for shape, window in (((2, 1024, 4, 2, 64), None), ((2, 1024, 4, 4, 64), None), ((2, 1024, 4, 2, 128), 300)):
    for cap in (check.CAP, None):
      good, msg = check.check(shape, best, cap, False, window=window)
      print(f"check {shape} window={window} cap={cap}: {'ok' if good else 'FAIL'} {msg}", flush=True)
  mosaic = upstream_mosaic.PallasMosaicGpuFlashAttention
  for d, heads, mask in ((128, "mha", "causal"), (128, "mha", "window-4096"), (128, "gqa-32/16", "causal"), (64, "gqa-16/8", "causal"), (256, "gqa-16/8", "causal")):
    shape = bench.Shape(seq_len=8192, head_dim=d, heads=heads, mask=mask, batch=2)
    sets = time_vjps(shape, [
        ("Mosaic GPU VJP", None),
        ("our Triton VJP", tokamax_softcap.PallasTritonFlashAttentionVjp()),
        (f"one-pass {best.name()}", opv.OnePassVjp(best)),
    ] + ([(f"one-pass {v.name()}", opv.OnePassVjp(v)) for v in (
        dataclasses.replace(best, a_from_smem=True),)] if d == 128 and shape.mask == "causal" and heads == "mha" else []))
    if d == 128 and heads == "mha" and mask == "causal":
      q, k, v = sets[0]
      op = mosaic(vjp=opv.OnePassVjp(best))
      f = lambda q, k, v: op(q, k, v, is_causal=True, logits_soft_cap=bench.CAP)
      dout = jax.random.normal(jax.random.PRNGKey(9), q.shape).astype(q.dtype)
      grad = jax.jit(lambda *a: jax.vjp(f, *a[:3])[1](a[3]))
      differ, spread = rerun_spread(grad, (q, k, v, dout), 10)
      print(f"determinism {shape}: dq differs in {differ} of 10 reruns; max |difference| dq/dk/dv " + " ".join(f"{x:.3e}" for x in spread), flush=True)

if __name__ == "__main__":
  grid() if sys.argv[1:] == ["grid"] else main()
