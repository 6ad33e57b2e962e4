"""The series' Mosaic GPU VJP, in Mosaic GPU's interpreter.

The series' Mosaic GPU VJP op (`patched.pallas_mosaic_gpu_vjp`), as tokamax
calls it, with its kernels run by JAX's Mosaic GPU interpreter on the CPU
(`mosaic_interpret`), against an f32 reference: patch 0031's one-pass
kernel next to our Pallas-Triton VJP (in the Pallas interpreter) on the same
residuals, output and cotangent, the cap active in every case; patch 0032's
per-head bias and key ranges in the two kernels. The H200 runs the kernels
themselves in `test_mosaic_gpu.py`.
"""

import dataclasses
import threading

import jax
import jax.numpy as jnp
import pytest
from tokamax._src import gpu_utils
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

# Mosaic GPU's interpreter came with jax 0.12 (the H200's jax 0.11.2 lacks it).
pytest.importorskip(
    "jax._src.pallas.mosaic_gpu.interpret.jaxpr_interpret",
    reason="Mosaic GPU's interpreter needs jax >= 0.12.",
)
import mosaic_interpret  # pylint: disable=g-bad-import-order,wrong-import-position

CAP = 50.0
_RULE_ARGS = ("mask", "precision", "bias", "q_indices", "k_indices")


@dataclasses.dataclass(frozen=True)
class Case:
  """Shapes and mask of a case; `q` `[1, T, H, D]`, `k` `[1, t, h, D]`."""

  mask: str
  seq_q: int = 256
  seq_k: int | None = None
  heads: tuple[int, int] = (2, 1)
  head_dim: int = 128
  v_dim: int | None = None
  dtype: str = "bfloat16"
  compute_wgs: int = 2
  vmapped: bool = False


def _masks(case: Case):
  """Returns the op's mask (a `base.Mask`) and its dense `[#H, T, t]` form."""
  t_q, t_k = case.seq_q, case.seq_k or case.seq_q
  q_pos = jnp.arange(t_q)[:, None]
  num_heads = case.heads[0]
  per_head = jnp.arange(num_heads)[:, None] * 37 + 0 * q_pos.T  # [H, T]
  mask = {
      "causal": base.Mask(is_causal=True),
      "none": base.Mask(),
      "window": base.Mask(causal_mask=base.CausalMask(window_size=48)),
      "documents": base.Mask(k_start=q_pos[:, 0] // 70 * 70, is_causal=True),
      "wide-window": base.Mask(causal_mask=base.CausalMask(window_size=200)),
      "long-documents": base.Mask(
          k_start=q_pos[:, 0] // 200 * 200, is_causal=True
      ),
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
      v_dim=case.v_dim,
  )
  if case.seq_k is not None:  # Cross attention: other keys and values.
    _, k, v, _, _ = numerics.random_inputs(
        (1, case.seq_k, case.heads[1], case.head_dim),
        case.heads[1],
        scale=(2 * CAP) ** 0.5,
        v_dim=case.v_dim,
        seed=1,
    )
  numerics.assert_cap_active(q, k, CAP, 5)
  return [x.astype(case.dtype) for x in (q, k, v, dout)]


def _pretend_sm90(monkeypatch) -> None:
  """Interprets Mosaic GPU kernels, and lets the VJP op take the CPU."""
  mosaic_interpret.patch(monkeypatch)
  monkeypatch.setattr(gpu_utils, "has_mosaic_gpu_support", lambda *_: True)
  monkeypatch.setattr(gpu_utils, "is_sm90", lambda *_: True)


def _residuals(q, k, bias, dense, cap):
  """`(m, l)` of the f32 logits, as Mosaic GPU's forward returns them.

  A row that attends to no key gets `m = -inf`, `l = 0`.
  """
  f32 = [x.astype(jnp.float32) for x in (q, k)]
  s = reference.logits(*f32, bias=bias)
  if cap is not None:
    s = cap * jnp.tanh(s / cap)
  s = jnp.where(dense, s, -jnp.inf)
  m = jnp.max(s, axis=-1)
  finite_m = jnp.where(jnp.isfinite(m), m, 0.0)
  return m, jnp.sum(jnp.exp(s - finite_m[..., None]), axis=-1)


def _relative_errors(grads, expected):
  return [harness.relative_error(g, e) for g, e in zip(grads, expected)]


def _keyless_rows_reference(q, k, v, dout, bias, dense, cap):
  """The f32 reference of Mosaic GPU's forward, zero in rows without keys.

  Mosaic GPU's forward gives a row that attends to no key `m = -inf`,
  `l = 0` and a zero output, so it adds nothing to any gradient.

  Args:
    q, k, v, dout: `[B, T, H, D]`, `[B, t, h, D]`, `[B, t, h, d]` and
      `[B, T, H, d]`, any float dtype.
    bias: None or a bias that broadcasts to `[B, H, T, t]`.
    dense: bool `[H, T, t]`, True where a query attends to a key.
    cap: `logits_soft_cap`, or None.

  Returns:
    `(m, l)` as `_residuals`, the f32 output and its VJP's f32 `(dq, dk, dv,
    dbias)` at `dout`.
  """
  attends = jnp.any(dense, axis=-1)[..., None]  # [H, T, 1]

  def ref_out(q, k, v, bias):
    out = reference.attention(q, k, v, bias, mask=dense, logits_soft_cap=cap)
    return jnp.where(jnp.swapaxes(attends, 0, 1), out, 0.0)

  f32 = [x.astype(jnp.float32) for x in (q, k, v)]
  out, ref_vjp = jax.vjp(ref_out, *f32, bias)
  expected = ref_vjp(dout.astype(jnp.float32))
  return _residuals(q, k, bias, dense, cap), out, expected


def _reference(case: Case):
  """A case's bf16 inputs, masks, residuals, output and f32 gradients.

  Returns:
    `(q, k, v, dout)`, `(mask, dense)` as `_masks`, `(m, l)`, the f32
    reference's output rounded to bf16, and its `(dq, dk, dv)`.
  """
  q, k, v, dout = _inputs(case)
  mask, dense = _masks(case)

  def ref_out(q, k, v):
    return reference.attention(q, k, v, mask=dense, logits_soft_cap=CAP)

  f32 = [x.astype(jnp.float32) for x in (q, k, v)]
  out, ref_vjp = jax.vjp(ref_out, *f32)
  expected = ref_vjp(dout.astype(jnp.float32))
  residuals = _residuals(q, k, None, dense, CAP)
  return (
      (q, k, v, dout),
      (mask, dense),
      residuals,
      out.astype(jnp.bfloat16),
      expected,
  )


def _mosaic_vjp(case: Case, q, k, v, mask, bias=None, *, deterministic: bool):
  """The series' Mosaic GPU VJP at 64 x 64 blocks, and the op's kwargs."""
  op = tokamax_softcap.PallasMosaicGpuFlashAttention(bypass_device_check=True)
  ba = op.bind(q, k, v, bias=bias, mask=mask, logits_soft_cap=CAP)
  kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
  config = patched.pallas_mosaic_gpu_vjp.sm90.Config(
      block_q_dkv=64,
      block_kv_dkv=64,
      block_q_dq=64,
      block_kv_dq=64,
      compute_wgs=case.compute_wgs,
  )
  vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
      config=config, bypass_device_check=True, deterministic=deterministic
  )
  return vjp, kwargs


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
    Case("causal", seq_q=256, seq_k=128),
    Case("documents", seq_q=197),  # Not a multiple of 8: padded rows.
    Case("window", head_dim=64, v_dim=128),
    Case("causal", head_dim=64, dtype="float16"),
    # Head dims past 128: two warpgroups split them (patch 0033).
    Case("causal", heads=(4, 2), head_dim=256),
    Case("documents", seq_q=197, head_dim=256),
    Case("none", seq_q=200, heads=(2, 2), head_dim=192),
    Case("window", head_dim=128, v_dim=256),
    Case("causal", head_dim=256, v_dim=128),
    Case("window", head_dim=256),
    Case("causal", head_dim=256, dtype="float16"),
    # Windows and documents wider than a kv tile: past the first tile, the
    # blocks nearest the diagonal hold the whole tile in every row's range,
    # later blocks only part of it.
    Case("wide-window", seq_q=512),
    Case("long-documents", seq_q=456, heads=(4, 2)),
    Case("wide-window", seq_q=456, head_dim=256),
    Case("long-documents", seq_q=512, head_dim=256),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fused_vjp_matches_the_reference(monkeypatch, case):
  _pretend_sm90(monkeypatch)
  sm90 = patched.pallas_mosaic_gpu_vjp.sm90
  fused = sm90.flash_attention_vjp_fused_kernel
  calls = []

  def record(*args, **kwargs):
    calls.append(kwargs["config"])
    return fused(*args, **kwargs)

  monkeypatch.setattr(sm90, "flash_attention_vjp_fused_kernel", record)

  (q, k, v, dout), (mask, _), (m, l), out, expected = _reference(case)
  mosaic_vjp, kwargs = _mosaic_vjp(case, q, k, v, mask, deterministic=False)

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
  bounds = _relative_errors((triton["q"], triton["k"], triton["v"]), expected)
  # Issue 43's target: no larger than ours. Measured (jax 0.12.0.1, CPU):
  # dq equal to ours in every case (both add dq in f32 and round once), dk
  # and dv 0.47-1.00x ours at head_dim <= 128. 5% over ours: the two add
  # dq's f32 terms in other orders, which can move the largest error by a
  # rounding step. Past 128 (patch 0033), the larger of ours and the
  # two-kernel VJP's: with a window dk was 1.25x ours (0.98-1.00x with
  # seeds 1-4 instead of 0), and with f16 dv 1.05x, both equal to the two
  # kernels' errors at the same elements: Mosaic GPU's rounding, not the
  # one pass's.
  if max(case.head_dim, case.v_dim or 0) > 128:
    two_kernels = dataclasses.replace(mosaic_vjp, deterministic=True)
    g = two_kernels((m, l), out, dout, q, k, v, **kwargs)
    two_kernel_errors = _relative_errors((g["q"], g["k"], g["v"]), expected)
    bounds = [max(x, y) for x, y in zip(bounds, two_kernel_errors)]
  for name, error, bound in zip(("dq", "dk", "dv"), errors, bounds):
    assert error <= 1.05 * bound, (name, errors, bounds)


@pytest.mark.parametrize(
    "case",
    [
        Case("causal", seq_q=200),
        Case("k_end-per-head", seq_q=197, head_dim=64),
        Case("documents", seq_q=200, heads=(4, 2), compute_wgs=1),
    ],
    ids=str,
)
def test_two_kernel_vjp_reads_no_row_past_the_queries(monkeypatch, case):
  # Where T is not a multiple of the tiles, the dq kernel's `plgpu.load` of
  # the last tile's rows of `m`, `l`, `delta` and the key ranges read past
  # those arrays (padded to a multiple of 8 only): at T200, rows 192-255 of
  # 200, which the interpreter rejects (IndexError) before patch 0034.
  # Errors against an f32 reference, the cap active.
  _pretend_sm90(monkeypatch)
  (q, k, v, dout), (mask, _), residuals, out, expected = _reference(case)
  vjp, kwargs = _mosaic_vjp(case, q, k, v, mask, deterministic=True)
  grads = vjp(residuals, out, dout, q, k, v, **kwargs)
  errors = _relative_errors((grads["q"], grads["k"], grads["v"]), expected)
  # Measured (jax 0.12.0.1, CPU): 1.5e-3 to 1.0e-2 (dq of the documents);
  # the bound is `test_two_kernel_vjp_reads_each_query_heads_bias`'s.
  assert max(errors) < 2e-2, errors


@pytest.mark.parametrize("seq_k", [200, 136])
@pytest.mark.parametrize(
    "along",
    ["bias-per-key", "bias-per-query", "mask-per-key", "mask-per-query"],
)
def test_two_kernel_vjp_reads_no_bias_or_mask_past_the_sequences(
    monkeypatch, along, seq_k
):
  # A bias or bool mask broadcast along the queries (`[1, H, 1, t]`) or the
  # keys (`[1, H, T, 1]`) reaches the two kernels as a vector, which they
  # load with `plgpu.load`, not clipped to the array: one block of keys (or
  # queries) per warpgroup, the last tile's reaching past the sequence,
  # padded to a multiple of 8 only. At T = t = 200 and 64 x 64 blocks with
  # two warpgroups, rows and keys 200-255 (keys 136-191 at t = 136); the
  # interpreter rejects those reads (IndexError) before patch 0036. The pad
  # values reach only dropped rows and keys: what this test catches is a read
  # past the arrays, and a non-finite gradient. Errors against an f32
  # reference, the cap active; masks that differ per head.
  _pretend_sm90(monkeypatch)
  case = Case("none", seq_q=200, seq_k=seq_k, heads=(2, 1), head_dim=64)
  q, k, v, dout = _inputs(case)
  t_q, num_heads = q.shape[1], q.shape[2]
  keys, rows = jnp.arange(seq_k), jnp.arange(t_q)
  heads = jnp.arange(num_heads)[:, None]
  bias, mask = None, base.Mask()
  if along == "bias-per-key":
    bias = (jnp.sin(keys + 3.0 * heads) * 4.0)[None, :, None, :]
  elif along == "bias-per-query":
    bias = (jnp.cos(rows + 3.0 * heads) * 4.0)[None, :, :, None]
  elif along == "mask-per-key":
    mask = base.Mask((keys % 5 != 3 - heads)[:, None, :])  # Per head.
  else:  # Per head, every 7th row attends to no key.
    mask = base.Mask((rows % 7 != heads)[:, :, None])
  dense = mask.as_array(t_q, seq_k)
  dense = jnp.ones((t_q, seq_k), bool) if dense is None else dense
  dense = jnp.broadcast_to(dense, (num_heads, t_q, seq_k))
  (m, l), out, expected = _keyless_rows_reference(
      q, k, v, dout, bias, dense, CAP
  )
  vjp, kwargs = _mosaic_vjp(case, q, k, v, mask, bias, deterministic=True)
  vjp = dataclasses.replace(vjp, dbias_intermediate_dtype=jnp.float32)
  grads = vjp((m, l), out.astype(jnp.bfloat16), dout, q, k, v, **kwargs)
  names = ("q", "k", "v") + (("bias",) if bias is not None else ())
  actual = [grads[n] for n in names]
  assert all(bool(jnp.all(jnp.isfinite(g))) for g in actual), names
  errors = _relative_errors(actual, expected)
  # Measured (jax 0.12.1, CPU): dq, dk and dv 2.0e-3 to 4.1e-3, dbias 3.2e-4
  # to 2.4e-3 (a bias per query has a dbias through the cap); the bound is
  # `test_two_kernel_vjp_reads_each_query_heads_bias`'s.
  assert max(errors) < 2e-2, errors


def _gqa_inputs():
  """bf16 `q`, `dout` `[1, 128, 4, 64]`, `k`, `v` `[1, 128, 2, 64]` (no cap).

  Returns:
    `(q, k, v, dout)` and an f32 bias `[1, 4, 1, 128]` (broadcast along the
    queries), of standard deviation 3.
  """
  t, num_heads = 128, 4
  q, k, v, _, dout = numerics.random_inputs((1, t, num_heads, 64), 2, scale=2.0)
  q, k, v, dout = (x.astype(jnp.bfloat16) for x in (q, k, v, dout))
  bias = 3 * jax.random.normal(jax.random.PRNGKey(5), (1, num_heads, 1, t))
  return (q, k, v, dout), bias


@pytest.mark.parametrize("vjp_name", ["series", "default"])
@pytest.mark.parametrize("k_ranges", [False, True], ids=["", "k_start"])
def test_two_kernel_vjp_reads_each_query_heads_bias(
    monkeypatch, k_ranges, vjp_name
):
  # With GQA (4 query heads on 2 kv heads) the dk/dv kernel read the bias of
  # a query head, where broadcast along the queries, and its key ranges, at
  # another head's index (`q_heads_per_kv_head * j + hi_kv`): before patch
  # 0032, dk and dv were off by 255x and 41x their largest values here (96x
  # and 41x with `k_start`); after it, 4.1e-3 and 1.7e-3 (jax 0.12.0.1, CPU).
  # A bias keeps the two kernels (patch 0031 takes none). No cap: the
  # indexing does not involve it.
  _pretend_sm90(monkeypatch)
  (q, k, v, dout), bias = _gqa_inputs()
  t, num_heads = q.shape[1], q.shape[2]
  mask = base.Mask()
  if k_ranges:  # Per query head: keys from 0, 11, 22 and 33.
    positions = jnp.arange(t)
    mask = base.Mask(
        k_start=jnp.arange(num_heads)[:, None] * 11 + 0 * positions
    )
  dense = mask.as_array(t, t)
  dense = jnp.ones((t, t), bool) if dense is None else dense
  m, l = _residuals(q, k, bias, dense, None)
  f32 = [x.astype(jnp.float32) for x in (q, k, v)]

  def ref_out(q, k, v):
    return reference.attention(q, k, v, bias, mask=dense)

  out, ref_vjp = jax.vjp(ref_out, *f32)
  expected = ref_vjp(dout.astype(jnp.float32))
  op = tokamax_softcap.PallasMosaicGpuFlashAttention(bypass_device_check=True)
  ba = op.bind(q, k, v, bias=bias, mask=mask)
  kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
  if vjp_name == "series":
    vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
        bypass_device_check=True
    )
  else:  # The default chain's: `use_triton_vjp` keeps Mosaic GPU's here.
    vjp = op.vjp
    assert not tokamax_softcap.use_triton_vjp(
        q, k, v, **{n: kwargs[n] for n in _RULE_ARGS}
    )
  grads = vjp((m, l), out.astype(jnp.bfloat16), dout, q, k, v, **kwargs)
  errors = _relative_errors((grads["q"], grads["k"], grads["v"]), expected)
  assert max(errors) < 2e-2, errors


@pytest.mark.parametrize("with_bias", [False, True], ids=["", "bias"])
@pytest.mark.parametrize(
    "mask_name", ["k_start-causal", "k_end", "bool-array-causal"]
)
def test_two_kernel_vjp_takes_no_gradient_from_rows_without_keys(
    monkeypatch, mask_name, with_bias
):
  # Rows that attend to no key: Mosaic GPU's forward gives them `m = -inf`,
  # `l = 0` and a zero output, so they add nothing to any gradient. With
  # `k_start` past a row and a causal mask, the two kernels took the
  # causally masked logits' weights as `exp2(-inf - m)`, NaN for `m = -inf`,
  # and `k_start` kept them: NaN dq, dk, dv and dbias (on an H200,
  # upstream's `test_grouped_query_attention_per_head_vjp`). A bias keeps
  # the two kernels in the default chain (patch 0031 takes none).
  _pretend_sm90(monkeypatch)
  (q, k, v, dout), bias = _gqa_inputs()
  t, num_heads = q.shape[1], q.shape[2]
  positions = jnp.arange(t)
  mask = {  # Head h's rows below 24 h, or every head's below 40, see none.
      "k_start-causal": base.Mask(
          k_start=jnp.arange(num_heads)[:, None] * 24 + 0 * positions,
          is_causal=True,
      ),
      "k_end": base.Mask(k_end=jnp.where(positions < 40, 0, t)),
      "bool-array-causal": base.Mask(positions[:, None] >= 40, is_causal=True),
  }[mask_name]
  dense = jnp.broadcast_to(mask.as_array(t, t), (num_heads, t, t))
  bias = bias if with_bias else None
  (m, l), out, expected = _keyless_rows_reference(
      q, k, v, dout, bias, dense, None
  )
  assert jnp.all((m == -jnp.inf) == (l == 0)) and jnp.any(l == 0)
  vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
      bypass_device_check=True, dbias_intermediate_dtype=jnp.float32
  )
  op = tokamax_softcap.PallasMosaicGpuFlashAttention(bypass_device_check=True)
  ba = op.bind(q, k, v, bias=bias, mask=mask)
  kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
  grads = vjp((m, l), out.astype(jnp.bfloat16), dout, q, k, v, **kwargs)
  names = ("q", "k", "v") + (("bias",) if with_bias else ())
  actual = [grads[n] for n in names]
  assert all(bool(jnp.all(jnp.isfinite(g))) for g in actual), names
  errors = _relative_errors(actual, expected)
  # Measured (jax 0.12.0.1, CPU): 1.3e-3 to 7.6e-3 (dk, `k_start` with the
  # bias); the bound is `test_two_kernel_vjp_reads_each_query_heads_bias`'s.
  assert max(errors) < 2e-2, errors


@pytest.mark.parametrize(
    "negative,deterministic",
    [("bias", True), ("logits", False), ("logits", True)],
    ids=["bias", "logits-one-pass", "logits-two-kernels"],
)
@pytest.mark.parametrize(
    "seq_q,seq_k,head_dim",
    [
        (200, 200, 64),
        (256, 136, 128),
        (136, 200, 64),
        (128, 192, 64),  # A multiple of 64, not of the one-pass tile, 128.
        (256, 256, 64),
        (200, 200, 256),
        (136, 200, 256),
    ],
)
def test_vjps_take_no_weight_from_keys_past_the_sequence(
    monkeypatch, seq_q, seq_k, head_dim, negative, deterministic
):
  # Keys past `t` (padding to 8, or past the kernels' last tile) have logits
  # of 0. In a row whose logits are all below about -88, their weight
  # `exp(0 - m)` overflows f32 to inf, and `inf * 0` in the `dS K` dot made
  # dq NaN or inf where `t` is not a multiple of the keys a kernel loads (64
  # here, 128 in the one-pass kernel's tiles below head_dim 256): in Mosaic
  # GPU's one-pass and two kernels (before patch 0038) and our Pallas-Triton
  # VJP (before 0039). The rows' logits sit near -200: with
  # `bias`, a bias along the keys (as a padding mask of -1e9 makes them),
  # which sends both settings of `deterministic` to the two kernels (the
  # one-pass kernel takes no bias); with `logits`, `q` and `k` on opposite
  # sides of one axis. No cap: a cap `c` keeps the logits above `-c`.
  _pretend_sm90(monkeypatch)
  case = Case("none", seq_q=seq_q, seq_k=seq_k, heads=(2, 1), head_dim=head_dim)
  q, _, _, _, dout = numerics.random_inputs((1, seq_q, 2, head_dim), 1)
  _, k, v, _, _ = numerics.random_inputs((1, seq_k, 2, head_dim), 1, seed=1)
  bias = None
  if negative == "bias":
    bias = jnp.full((1, 1, 1, seq_k), -200.0)
  else:
    offset = jnp.zeros(head_dim).at[0].set((200 * head_dim**0.5) ** 0.5)
    q, k = q + offset, k - offset
  q, k, v, dout = [x.astype(jnp.bfloat16) for x in (q, k, v, dout)]
  dense = jnp.ones((2, seq_q, seq_k), bool)
  (m, l), out, expected = _keyless_rows_reference(
      q, k, v, dout, bias, dense, None
  )
  assert jnp.all(m < -150), float(jnp.max(m))  # exp(-m) overflows f32.
  op = tokamax_softcap.PallasMosaicGpuFlashAttention(bypass_device_check=True)
  ba = op.bind(q, k, v, bias=bias)
  kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
  vjp, _ = _mosaic_vjp(case, q, k, v, None, deterministic=deterministic)
  sm90 = patched.pallas_mosaic_gpu_vjp.sm90
  fused, calls = sm90.flash_attention_vjp_fused_kernel, []
  monkeypatch.setattr(
      sm90,
      "flash_attention_vjp_fused_kernel",
      lambda *args, **kw: calls.append(1) or fused(*args, **kw),
  )
  out = out.astype(jnp.bfloat16)
  with interpret.interpret():
    triton = tokamax_softcap.PallasTritonFlashAttentionVjp()(
        (m, l), out, dout, q, k, v, **kwargs
    )
  grads = vjp((m, l), out, dout, q, k, v, **kwargs)
  assert bool(calls) == (not deterministic)  # The one-pass kernel, or two.
  names = ("q", "k", "v") + (("bias",) if bias is not None else ())
  for g in (grads, triton):
    assert all(bool(jnp.all(jnp.isfinite(g[n]))) for n in names), names
  errors = _relative_errors([grads[n] for n in names], expected)
  bounds = _relative_errors([triton[n] for n in names], expected)
  print(seq_q, seq_k, head_dim, negative, deterministic, errors, bounds)
  # Measured (jax 0.12.1, CPU): 1.3e-4 (dbias) to 1.3e-2 (our dk), but dq
  # with `logits`: 0.050-0.061 for every VJP, ours too. There `k`'s offset
  # cancels in dq (each row of `dS` sums to zero) only as far as `dS`,
  # rounded to bf16 for the dot, lets it: no larger than ours, as in
  # `test_fused_vjp_matches_the_reference`, and below 0.1. Else the bound of
  # `test_two_kernel_vjp_reads_no_row_past_the_queries`.
  if negative == "logits":
    assert errors[0] <= 1.05 * bounds[0] and bounds[0] < 0.1, (errors, bounds)
    errors, bounds = errors[1:], bounds[1:]
  assert max(errors + bounds) < 2e-2, (errors, bounds)


def test_an_exception_in_a_callback_fails_the_kernel(monkeypatch):
  # The interpreter runs warpgroups as threads. An exception in one of
  # `mosaic_interpret`'s callbacks (here the reduce-add TMA store of dq) must
  # fail the kernel; before, it ended its warpgroup's thread and left the
  # others waiting at a barrier forever (how jax 0.12.1 hung the suite).
  def fail(self, tma_thread_id):
    del self, tma_thread_id  # Unused.
    raise RuntimeError("injected failure")

  _pretend_sm90(monkeypatch)
  # pylint: disable-next=protected-access
  monkeypatch.setattr(mosaic_interpret._AddSmemToGmem, "__call__", fail)
  case = CASES[0]
  (q, k, v, dout), (mask, _), (m, l), out, _ = _reference(case)
  vjp, kwargs = _mosaic_vjp(case, q, k, v, mask, deterministic=False)
  outcome = []

  def run():
    try:
      vjp((m, l), out, dout, q, k, v, **kwargs)
    except Exception as e:  # pylint: disable=broad-exception-caught
      outcome.append(e)

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  thread.join(timeout=60)  # Measured: 1.3 s (jax 0.12.0.1, CPU).
  if thread.is_alive():  # Free the interpreter for the tests after this one.
    mosaic_interpret.gpu_callbacks.reset_gpu_interpret_mode_state()
    pytest.fail("the kernel hung")
  assert outcome and "injected failure" in str(outcome[0]), outcome
