"""Patch 0031's one-pass Mosaic GPU VJP, in Mosaic GPU's interpreter.

The series' Mosaic GPU VJP op (`patched.pallas_mosaic_gpu_vjp`), as tokamax
calls it, with its kernel run by JAX's Mosaic GPU interpreter on the CPU
(`mosaic_interpret`): its gradients against an f32 reference, next to our
Pallas-Triton VJP's (in the Pallas interpreter) on the same residuals, output
and cotangent. The cap is active in every case. The H200 runs the kernel
itself in `test_mosaic_gpu.py`.
"""

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from tokamax._src import gpu_utils
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import reference
import mosaic_interpret  # pylint: disable=g-bad-import-order
import numerics  # pylint: disable=g-bad-import-order

if not hasattr(jax.experimental.pallas.mosaic_gpu, "InterpretGPUParams"):
  pytest.skip(
      "Mosaic GPU's interpreter needs jax >= 0.12.", allow_module_level=True
  )

CAP = 50.0


@dataclasses.dataclass(frozen=True)
class Case:
  """Shapes and mask of a case; `q` `[1, T, H, D]`, `k` `[1, t, h, D]`."""

  mask: str
  seq_q: int = 256
  seq_k: int | None = None
  heads: tuple[int, int] = (2, 1)
  head_dim: int = 128
  compute_wgs: int = 2
  vmapped: bool = False


def _masks(case: Case):
  """Returns the op's mask (a `base.Mask`) and its dense `[#H, T, t]` form."""
  t_q, t_k = case.seq_q, case.seq_k or case.seq_q
  q_pos, k_pos = jnp.arange(t_q)[:, None], jnp.arange(t_k)
  num_heads = case.heads[0]
  per_head = jnp.arange(num_heads)[:, None] * 37 + 0 * q_pos.T  # [H, T]
  mask = {
      "causal": base.Mask(is_causal=True),
      "none": base.Mask(),
      "window": base.Mask(causal_mask=base.CausalMask(window_size=48)),
      "documents": base.Mask(k_start=q_pos[:, 0] // 70 * 70, is_causal=True),
      "k_start-per-head": base.Mask(k_start=per_head),
      "k_end-per-head": base.Mask(k_end=t_k - per_head),
  }[case.mask]
  dense = mask.as_array(t_q, t_k)
  if dense is None:  # No mask.
    dense = jnp.ones((t_q, t_k), bool)
  return mask, jnp.broadcast_to(dense, (num_heads, t_q, t_k))


def _inputs(case: Case):
  q, k, v, _, dout = numerics.random_inputs(
      (1, case.seq_q, case.heads[0], case.head_dim),
      case.heads[1],
      scale=(2 * CAP) ** 0.5,
  )
  if case.seq_k is not None:  # Cross attention: other keys and values.
    k2, v2, _, _, _ = numerics.random_inputs(
        (1, case.seq_k, case.heads[1], case.head_dim),
        case.heads[1],
        scale=(2 * CAP) ** 0.5,
        seed=1,
    )
    k, v = k2, v2 / (2 * CAP) ** 0.5
  numerics.assert_cap_active(q, k, CAP, 5)
  return [x.astype(jnp.bfloat16) for x in (q, k, v, dout)]


def _relative_errors(grads, expected):
  return [
      float(jnp.max(jnp.abs(g.astype(jnp.float32) - e)) / jnp.max(jnp.abs(e)))
      for g, e in zip(grads, expected)
  ]


CASES = [
    Case("causal"),
    Case("none", seq_q=200, heads=(2, 2), head_dim=64),
    Case("window"),
    Case("documents", head_dim=64),
    Case("k_start-per-head"),
    Case("k_end-per-head", seq_q=200),
    Case("causal", vmapped=True),
    Case("causal", seq_q=192, head_dim=96, compute_wgs=1),
    Case("causal", seq_q=128, seq_k=256),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fused_vjp_matches_the_reference(monkeypatch, case):
  mosaic_interpret.patch(monkeypatch)
  monkeypatch.setattr(gpu_utils, "has_mosaic_gpu_support", lambda *_: True)
  monkeypatch.setattr(gpu_utils, "is_sm90", lambda *_: True)
  sm90 = patched.pallas_mosaic_gpu_vjp.sm90
  fused = sm90.flash_attention_vjp_fused_kernel
  calls = []

  def record(*args, **kwargs):
    calls.append(kwargs["config"])
    return fused(*args, **kwargs)

  monkeypatch.setattr(sm90, "flash_attention_vjp_fused_kernel", record)

  q, k, v, dout = _inputs(case)
  mask, dense = _masks(case)
  f32 = [x.astype(jnp.float32) for x in (q, k, v)]
  s = CAP * jnp.tanh(reference.logits(*f32[:2]) / CAP)
  s = jnp.where(dense, s, -jnp.inf)
  m = jnp.max(s, axis=-1)  # Every row attends to a key.
  l = jnp.sum(jnp.exp(s - m[..., None]), axis=-1)

  def ref_out(q, k, v):
    return reference.attention(q, k, v, mask=dense, logits_soft_cap=CAP)

  out, ref_vjp = jax.vjp(ref_out, *f32)
  expected = ref_vjp(dout.astype(jnp.float32))
  out = out.astype(jnp.bfloat16)

  op = tokamax_softcap.PallasMosaicGpuFlashAttention(bypass_device_check=True)
  ba = op.bind(q, k, v, mask=mask, logits_soft_cap=CAP)
  kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
  config = sm90.Config(
      block_q_dkv=64,
      block_kv_dkv=64,
      block_q_dq=64,
      block_kv_dq=64,
      compute_wgs=case.compute_wgs,
  )
  mosaic_vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
      config=config, bypass_device_check=True
  )

  def fused_grads(m, l, out, dout, q, k, v):
    grads = mosaic_vjp((m, l), out, dout, q, k, v, **kwargs)
    return grads["q"], grads["k"], grads["v"]

  args = (m, l, out, dout, q, k, v)
  if case.vmapped:  # A batch of 2: the inputs, and their negations.
    args = [jnp.stack([x, -x if x.dtype == jnp.bfloat16 else x]) for x in args]
    grads = jax.vmap(fused_grads)(*args)
    assert all(jnp.array_equal(g[0], -g[1]) for g in grads)
    grads = [g[0] for g in grads]
  else:
    grads = fused_grads(*args)
  assert calls and all(c.compute_wgs == case.compute_wgs for c in calls)

  with interpret.interpret():
    triton = tokamax_softcap.PallasTritonFlashAttentionVjp()(
        (m, l), out, dout, q, k, v, **kwargs
    )
  errors = _relative_errors(grads, expected)
  triton_errors = _relative_errors(
      (triton["q"], triton["k"], triton["v"]), expected
  )
  # Issue 43's target: no larger than ours. Measured (jax 0.12.0.1, CPU):
  # dq equal to ours in every case (both add dq in f32 and round once), dk
  # and dv 0.50-1.00x ours.
  for name, error, bound in zip(("dq", "dk", "dv"), errors, triton_errors):
    assert error <= bound, (name, errors, triton_errors)
