"""The ops as drop-ins for tokamax's, registration, and input errors."""

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import qwix
import tokamax
from tokamax._src import gpu_utils
from tokamax._src.ops.attention import api
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_mosaic_gpu as upstream_mosaic_gpu
from tokamax._src.ops.attention import pallas_triton as upstream
from tokamax._src.ops.attention import pallas_triton_vjp as upstream_vjp
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import patched
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

CAP = 10.0
# f32 comparisons at full f32 precision (DEFAULT lets a GPU use TF32).
HIGHEST = jax.lax.Precision.HIGHEST


def _inputs(
    shape=(2, 128, 4, 64), kv_heads=2, scale=2 * math.sqrt(CAP), seed=0
):
  """Returns `q, k, v, dout` with pre-cap logits of std `scale**2`."""
  q, k, v, _, dout = numerics.random_inputs(
      shape, kv_heads, scale=scale, seed=seed
  )
  numerics.assert_cap_active(q, k, CAP, 5)
  return q, k, v, dout


def _grads(f, q, k, v, dout):
  out, f_vjp = jax.vjp(f, q, k, v)
  return out, f_vjp(dout)


def test_ops_are_drop_in_subclasses():
  op = tokamax_softcap.PallasTritonFlashAttention()
  assert isinstance(op, upstream.PallasTritonFlashAttention)
  assert isinstance(op.vjp, upstream_vjp.PallasTritonFlashAttentionVjp)
  assert isinstance(op.vjp, tokamax_softcap.PallasTritonFlashAttentionVjp)
  assert type(op).__name__ == upstream.PallasTritonFlashAttention.__name__
  assert type(op.vjp).__name__ == "PallasTritonFlashAttentionVjp"
  assert op.config_cls is upstream.Config
  assert op.vjp.config_cls is upstream_vjp.Config


def test_replace_and_upstream_configs_keep_working():
  q, k, v, dout = _inputs()
  config = upstream.Config(block_q=32, block_k=32, num_warps=4, num_stages=2)
  vjp_config = upstream_vjp.Config(
      block_m1=32,
      block_n1=32,
      block_m2=32,
      block_n2=32,
      num_warps=4,
      num_stages=2,
  )
  op = tokamax_softcap.PallasTritonFlashAttention(config=config)
  op = op.replace(vjp=op.vjp.replace(config=vjp_config))
  assert isinstance(op, tokamax_softcap.PallasTritonFlashAttention)
  f = lambda q, k, v: op(
      q, k, v, is_causal=True, logits_soft_cap=CAP, precision=HIGHEST
  )
  ref = lambda q, k, v: reference.attention(
      q, k, v, mask=jnp.tri(q.shape[1], dtype=bool), logits_soft_cap=CAP
  )
  actual = _grads(f, q, k, v, dout)
  expected = _grads(ref, q, k, v, dout)
  scale = numerics.max_abs(expected[1])  # Of the gradients.
  numerics.assert_close_f32(actual, expected, scale=scale)


@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((1, 128, 2, 512), jnp.bfloat16),
        ((1, 128, 2, 256), jnp.float32),
        ((1, 128, 2, 64), jnp.float32),
    ],
)
def test_forward_configs_are_the_series(shape, dtype):
  # The op's heuristics and autotuning space are the patched module's: for
  # head_dim 512 in bf16 upstream picks 64x64 blocks with two stages, which do
  # not fit in a Hopper GPU's shared memory; the series picks 32x32 blocks
  # with two stages on Hopper (patch 0027), one stage elsewhere (patch 0025).
  # (The series does not change the forward's autotuning space: that
  # comparison guards the delegation only against a later change.)
  q = jnp.zeros(shape, dtype)
  ours = tokamax_softcap.PallasTritonFlashAttention()
  series = patched.pallas_triton.PallasTritonFlashAttention()
  ba = ours.bind(q, q, q, is_causal=True)
  fields = dataclasses.asdict
  assert fields(ba.heuristics_config) == fields(
      series._get_heuristics_config(ba)  # pylint: disable=protected-access
  )
  assert {tuple(fields(c).items()) for c in ours._get_autotuning_configs(ba)} == {  # pylint: disable=protected-access
      tuple(fields(c).items())
      for c in series._get_autotuning_configs(ba)  # pylint: disable=protected-access
  }
  if shape[-1] == 512:
    config = ba.heuristics_config
    if gpu_utils.is_sm90():
      assert (config.block_q, config.block_k, config.num_stages) == (32, 32, 2)
    else:
      assert config.num_stages == 1
    upstream_config = upstream.PallasTritonFlashAttention()._get_heuristics_config(ba)  # pylint: disable=protected-access
    assert (
        upstream_config.block_q,
        upstream_config.block_k,
        upstream_config.num_stages,
    ) == (64, 64, 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(is_causal=True),
        dict(mask=base.Mask(k_start=jnp.array([0] * 40 + [40] * 88))),
        dict(bias=True),
    ],
    ids=["causal", "k_start", "bias"],
)
def test_uncapped_gradients_are_as_accurate_as_upstream(kwargs):
  # Without a cap the series computes as upstream does but for its fixes, its
  # approximate `exp2` (PTX's `ex2.approx`, patch 0018) and its softmax in base
  # 2 (patch 0023), whose logits are rounded once at `|s| log2(e)` rather than
  # at `|s|`: in natural units, 1 / log2(e) to 2 / log2(e) = 0.69x to 1.39x
  # upstream's rounding error. So at full f32 precision, against an f64
  # reference, out, dq, dk and dv are each within 3x upstream's error (why 3x:
  # below). Against the f32 reference the check would be unfair: upstream rounds
  # its logits as the reference does (measured in the interpreter, which runs
  # `ex2.approx` as a `2**x` within 1.3 ulp: out 1.9e-6 against upstream's
  # 2.4e-7 there, and 7.6e-6 against 7.5e-6 in f64; the ratios in f64 were 0.91x
  # to 1.30x, the largest dk with `k_start`). With a bias upstream's error is
  # the larger on a GPU: it adds the bias to the dot of the scaled `q`, which
  # Triton folds into the dot's accumulator. Both errors are f32 roundings of
  # logits up to several hundred, and XLA's CPU code sums them in an order that
  # depends on the CPU's vector width: on a 2-core AMD EPYC with AVX2 and no
  # AVX-512 (2026-12-02, jax 0.12.0.1) the `k_start` ratios were 0.91x (out),
  # 1.43x (dq), 2.49x (dk: 1.69e-5 against 6.79e-6) and 1.15x (dv). Hence 3x: a
  # wrong exponent base, scale or mask is off by orders of magnitude more.
  q, k, v, dout = _inputs()
  mask = None
  if kwargs.pop("bias", False):
    kwargs["bias"] = jax.random.normal(jax.random.PRNGKey(1), (2, 4, 128, 128))
  if kwargs.get("is_causal"):
    mask = jnp.tri(q.shape[1], dtype=bool)
  elif "mask" in kwargs:
    mask = kwargs["mask"].as_array(q.shape[1], k.shape[1])
  ours = tokamax_softcap.PallasTritonFlashAttention()
  theirs = upstream.PallasTritonFlashAttention(
      vjp=upstream_vjp.PallasTritonFlashAttentionVjp()
  )
  kwargs["precision"] = HIGHEST
  actual = _grads(lambda q, k, v: ours(q, k, v, **kwargs), q, k, v, dout)
  expected = _grads(lambda q, k, v: theirs(q, k, v, **kwargs), q, k, v, dout)
  with jax.enable_x64(True):
    f64 = lambda x: None if x is None else jnp.asarray(x, jnp.float64)
    bias = f64(kwargs.get("bias"))
    ref = _grads(
        lambda q, k, v: reference.attention(
            q, k, v, bias, mask=mask, dtype=jnp.float64
        ),
        *map(f64, (q, k, v, dout)),
    )
    for a, e, r in zip(*map(jax.tree.leaves, (actual, expected, ref))):
      assert r.dtype == jnp.float64
      error = harness.relative_error(a, r)
      assert error <= 3 * harness.relative_error(e, r), error


def test_upstream_raises_for_the_cap_and_we_do_not():
  q, k, v, dout = _inputs()
  theirs = upstream.PallasTritonFlashAttention(
      vjp=upstream_vjp.PallasTritonFlashAttentionVjp()
  )
  with pytest.raises(NotImplementedError, match="logits_soft_cap"):
    _grads(lambda q, k, v: theirs(q, k, v, logits_soft_cap=CAP), q, k, v, dout)
  ours = tokamax_softcap.PallasTritonFlashAttention()
  _, grads = _grads(
      lambda q, k, v: ours(q, k, v, logits_soft_cap=CAP), q, k, v, dout
  )
  assert all(bool(jnp.all(jnp.isfinite(g))) for g in grads)


@pytest.mark.parametrize(
    "cap", [0.0, -1.0, math.nan, math.inf, -math.inf, True, "10", 1j, None]
)
def test_invalid_logits_soft_cap_raises_value_error(cap):
  q, k, v, _ = _inputs()
  op = tokamax_softcap.PallasTritonFlashAttention()
  if cap is None:
    op(q, k, v, logits_soft_cap=cap)  # `None` means no cap: valid.
    return
  with pytest.raises(ValueError, match="logits_soft_cap"):
    op(q, k, v, logits_soft_cap=cap)


def test_traced_logits_soft_cap_raises_value_error():
  q, k, v, _ = _inputs()
  op = tokamax_softcap.PallasTritonFlashAttention()
  with pytest.raises(ValueError, match="logits_soft_cap"):
    jax.jit(lambda cap: op(q, k, v, logits_soft_cap=cap))(CAP)


def test_numpy_and_int_caps_are_accepted_as_floats():
  q, k, v, _ = _inputs()
  op = tokamax_softcap.PallasTritonFlashAttention()
  expected = op(q, k, v, logits_soft_cap=10.0)
  for cap in (np.float32(10.0), 10, np.int64(10)):
    chex.assert_trees_all_equal(op(q, k, v, logits_soft_cap=cap), expected)


def test_dropout_has_no_vjp_but_runs_forward():
  q, k, v, dout = _inputs()
  dropout_mask = jax.random.bernoulli(
      jax.random.PRNGKey(2), shape=(2, 4, 128, 128)
  )
  op = tokamax_softcap.PallasTritonFlashAttention()
  f = lambda q, k, v: op(q, k, v, dropout_mask=dropout_mask, dropout_rate=0.5)
  assert f(q, k, v).shape == q.shape  # Inference supports dropout.
  with pytest.raises(NotImplementedError, match="dropout_mask"):
    _grads(f, q, k, v, dout)


def test_quantized_inputs_have_no_vjp_but_run_forward():
  q, k, v, dout = _inputs()
  quantize = lambda x: qwix.quantize(x, jnp.int8, channelwise_axes=(0, 1, 2))
  qk, qv = quantize(k), quantize(v)
  op = tokamax_softcap.PallasTritonFlashAttention()
  kwargs = dict(logits_soft_cap=CAP, precision=HIGHEST)
  # Inference takes the quantized arrays: it equals the fp32 reference on
  # the dequantized ones (measured on the CPU: 2.4e-7 absolute, outputs up
  # to 0.68; atol 1e-6 as the f32 harness cases of tokamax).
  out = op(q, qk, qv, **kwargs)
  expected = reference.attention(
      q, qwix.dequantize(qk), qwix.dequantize(qv), logits_soft_cap=CAP
  )
  chex.assert_trees_all_close(out, expected, atol=1e-6)
  f = lambda q, k, v: op(q, qk, qv, **kwargs)
  with pytest.raises(NotImplementedError, match=r"\) k, v are not supported"):
    _grads(f, q, k, v, dout)


def test_dropout_falls_back_in_the_implementation_chain():
  q, k, v, dout = _inputs()
  dropout_mask = jax.random.bernoulli(
      jax.random.PRNGKey(2), shape=(2, 4, 128, 128)
  )
  ours = tokamax_softcap.PallasTritonFlashAttention()
  xla = base.DotProductAttention()

  def loss(q, k, v, impls):
    out = impls[0](
        q, k, v, dropout_mask=dropout_mask, dropout_rate=0.5, precision=HIGHEST
    )
    return jnp.sum(out * dout)

  def chain(q, k, v):
    try:
      return loss(q, k, v, [ours])
    except NotImplementedError:
      return loss(q, k, v, [xla])

  actual = jax.grad(chain, argnums=(0, 1, 2))(q, k, v)
  expected = jax.grad(loss, argnums=(0, 1, 2))(q, k, v, [xla])
  chex.assert_trees_all_close(actual, expected, rtol=1e-5, atol=1e-5)


def test_import_registers_and_unregister_restores_exactly():
  assert tokamax_softcap.is_registered()
  registered = api.IMPLEMENTATIONS
  assert isinstance(
      registered["triton"], tokamax_softcap.PallasTritonFlashAttention
  )
  mosaic_gpu = registered["mosaic_gpu"]
  assert type(mosaic_gpu) is tokamax_softcap.PallasMosaicGpuFlashAttention
  assert mosaic_gpu.vjp == tokamax_softcap.MosaicGpuOrTritonVjp()
  tokamax_softcap.unregister()
  original = api.IMPLEMENTATIONS
  assert not tokamax_softcap.is_registered()
  assert type(original["triton"]) is upstream.PallasTritonFlashAttention
  assert (
      type(original["mosaic_gpu"])
      is upstream_mosaic_gpu.PallasMosaicGpuFlashAttention
  )
  tokamax_softcap.unregister()  # Idempotent.
  assert api.IMPLEMENTATIONS is original
  tokamax_softcap.register()
  tokamax_softcap.register()  # Idempotent.
  assert api.IMPLEMENTATIONS["xla"] is original["xla"]
  tokamax_softcap.unregister()
  assert api.IMPLEMENTATIONS is original  # The very mapping, not a copy.
  tokamax_softcap.register()


def test_registered_context_restores_previous_state():
  before = api.IMPLEMENTATIONS
  custom = tokamax_softcap.PallasTritonFlashAttention(use_base2=True)
  with tokamax_softcap.registered(custom):
    assert api.IMPLEMENTATIONS["triton"] is custom
  assert api.IMPLEMENTATIONS is before
  tokamax_softcap.unregister()
  with tokamax_softcap.registered():
    assert tokamax_softcap.is_registered()
  assert not tokamax_softcap.is_registered()
  tokamax_softcap.register()


@pytest.mark.parametrize("implementation", ["triton", None])
def test_dot_product_attention_is_differentiable_with_cap(implementation):
  q, k, v, dout = _inputs()

  @jax.jit
  def loss(q, k, v):
    out = tokamax.dot_product_attention(
        q,
        k,
        v,
        is_causal=True,
        logits_soft_cap=CAP,
        precision=HIGHEST,
        implementation=implementation,
    )
    return jnp.sum(out * dout)

  def ref_loss(q, k, v):
    mask = jnp.tri(q.shape[1], dtype=bool)
    out = reference.attention(q, k, v, mask=mask, logits_soft_cap=CAP)
    return jnp.sum(out * dout)

  actual = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
  expected = jax.grad(ref_loss, argnums=(0, 1, 2))(q, k, v)
  numerics.assert_close_f32(actual, expected, scale=numerics.max_abs(expected))


def test_causal_autotuning_space_holds_only_tileable_blocks():
  q, k, v, dout = _inputs()
  op = tokamax_softcap.PallasTritonFlashAttention()

  def autotuning_configs(**kwargs):
    out, residuals = op(q, k, v, return_residuals=True, **kwargs)
    ba = op.bind(q, k, v, **kwargs)
    fwd_kwargs = {n: a for n, a in ba.kwargs.items() if n != "return_residuals"}
    vjp_ba = op.vjp.bind(residuals, out, dout, *ba.args, **fwd_kwargs)
    return op.vjp._get_autotuning_configs(vjp_ba)  # pylint: disable=protected-access

  configs = autotuning_configs(is_causal=True)
  assert configs and all(type(c) is upstream_vjp.Config for c in configs)
  assert all(c.block_n1 % c.block_m1 == 0 for c in configs)
  assert all(c.block_m2 % c.block_n2 == 0 for c in configs)
  assert len(autotuning_configs()) > len(configs)
