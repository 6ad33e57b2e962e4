"""Malformed arguments raise an error naming them, before any kernel runs."""

import jax
import jax.numpy as jnp
import pytest
import tokamax
from tokamax._src.ops.attention import base
import tokamax_softcap

SHAPE = (1, 128, 4, 64)  # B, T, H, D
T = SHAPE[1]


def _ones(shape, dtype=jnp.float32):
  return jnp.ones(shape, dtype)


def _qkv(q_shape=SHAPE, k_shape=SHAPE, v_shape=None, dtypes=(jnp.float32,) * 3):
  v_shape = k_shape if v_shape is None else v_shape
  return tuple(map(_ones, (q_shape, k_shape, v_shape), dtypes))


# (id, (q, k, v), keyword arguments, error type, words the message contains).
CASES = [
    (
        "kv_heads_not_divisor",
        _qkv(k_shape=(1, T, 3, 64)),
        {},
        ValueError,
        ("`q`", "(4)", "(3)"),
    ),
    (
        "kv_heads_more_than_q",
        _qkv(q_shape=(1, T, 4, 64), k_shape=(1, T, 8, 64)),
        {},
        ValueError,
        ("`q`", "(4)", "(8)"),
    ),
    (
        "head_dim",
        _qkv(k_shape=(1, T, 4, 32), v_shape=SHAPE),
        {},
        ValueError,
        ("`k`", "head_dim", "64", "32"),
    ),
    (
        "seq_len_k_v",
        _qkv(v_shape=(1, 96, 4, 64)),
        {},
        ValueError,
        ("`k`", "`v`", "96"),
    ),
    (
        "batch_k",
        _qkv(k_shape=(2, T, 4, 64), v_shape=(2, T, 4, 64)),
        {},
        ValueError,
        ("`k`", "batch"),
    ),
    (
        "batch_v",
        _qkv(v_shape=(2, T, 4, 64)),
        {},
        ValueError,
        ("`v`", "batch"),
    ),
    ("rank", (_ones((T, 64)),) * 3, {}, ValueError, ("`q`", "[128, 64]")),
    (
        "integer_q",
        _qkv(dtypes=(jnp.int32,) * 3),
        {},
        TypeError,
        ("`q`", "int32"),
    ),
    (
        "bias_heads",
        _qkv(),
        dict(bias=_ones((3, T, T))),
        ValueError,
        ("`bias`",),
    ),
    ("bias_keys", _qkv(), dict(bias=_ones((T, 100))), ValueError, ("`bias`",)),
    (
        "bias_integer",
        _qkv(),
        dict(bias=_ones((T, T), jnp.int32)),
        TypeError,
        ("`bias`",),
    ),
    (
        "mask_keys",
        _qkv(),
        dict(mask=_ones((T, 100), bool)),
        ValueError,
        ("`mask`", "[128, 100]"),
    ),
    (
        "mask_float",
        _qkv(),
        dict(mask=base.Mask(_ones((T, T)))),
        TypeError,
        ("`mask`", "boolean"),
    ),
    (
        "k_start_length",
        _qkv(),
        dict(mask=base.Mask(k_start=jnp.zeros((100,), jnp.int32))),
        ValueError,
        ("`k_start`", "[100]"),
    ),
    (
        "k_end_float",
        _qkv(),
        dict(mask=base.Mask(k_end=jnp.zeros((T,)))),
        TypeError,
        ("`k_end`", "integer"),
    ),
    (
        "q_start_heads",
        _qkv(),
        dict(mask=base.Mask(q_start=jnp.zeros((3, T), jnp.int32))),
        ValueError,
        ("`q_start`",),
    ),
    (
        "q_end_float",
        _qkv(),
        dict(mask=base.Mask(q_end=jnp.zeros((T,)))),
        TypeError,
        ("`q_end`",),
    ),
    (
        "logits_dtype_int",
        _qkv(),
        dict(logits_dtype=jnp.int32),
        TypeError,
        ("`logits_dtype`", "int32"),
    ),
    (
        "logits_dtype_name",
        _qkv(),
        dict(logits_dtype="float33"),
        TypeError,
        ("`logits_dtype`", "float33"),
    ),
    ("precision", _qkv(), dict(precision="fast"), ValueError, ("`precision`",)),
    (
        "precision_triple",
        _qkv(),
        dict(precision=(jax.lax.Precision.HIGHEST,) * 3),
        ValueError,
        ("`precision`", "pair"),
    ),
]
# `dot_product_attention` takes no `logits_dtype` and only array masks.
API_CASES = [
    c
    for c in CASES
    if "logits_dtype" not in c[2]
    and not isinstance(c[2].get("mask"), base.Mask)
]


def _assert_raises(f, error, words):
  result = None
  with pytest.raises(error) as excinfo:
    result = f()
  assert result is None
  assert type(excinfo.value) is error  # Not a subclass (jaxtyping's).
  for word in words:
    assert word in str(excinfo.value)


@pytest.mark.parametrize(
    "qkv, kwargs, error, words",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_op_rejects(qkv, kwargs, error, words):
  op = tokamax_softcap.PallasTritonFlashAttention()
  _assert_raises(lambda: op(*qkv, **kwargs), error, words)


@pytest.mark.parametrize(
    "qkv, kwargs, error, words",
    [c[1:] for c in API_CASES],
    ids=[c[0] for c in API_CASES],
)
def test_dot_product_attention_rejects(qkv, kwargs, error, words):
  f = lambda: tokamax.dot_product_attention(
      *qkv, implementation="triton", logits_soft_cap=30.0, **kwargs
  )
  _assert_raises(f, error, words)


def _vjp_kwargs(**kwargs):
  """The VJP's keyword arguments as the forward binds them, with `kwargs`."""
  bound = tokamax_softcap.PallasTritonFlashAttention().bind(*_qkv()).arguments
  bound = {n: x for n, x in bound.items() if n not in ("q", "k", "v")}
  del bound["return_residuals"]
  if isinstance(kwargs.get("mask"), jax.Array):
    kwargs["mask"] = base.Mask(kwargs["mask"])
  return bound | kwargs


VJP_CASES = [c for c in CASES if "logits_dtype" not in c[2]]
VJP_CASES = [c for c in VJP_CASES if "precision" not in c[2]]


@pytest.mark.parametrize(
    "qkv, kwargs, error, words",
    [c[1:] for c in VJP_CASES],
    ids=[c[0] for c in VJP_CASES],
)
def test_vjp_rejects(qkv, kwargs, error, words):
  """The VJP op, called directly with residuals and cotangents of `q`'s
  shape."""
  q, k, v = qkv
  out = jnp.ones(q.shape[:-1] + v.shape[-1:], q.dtype)
  residual = jnp.ones(out.shape[:-3] + out.shape[-2:-1] + out.shape[-3:-2])
  vjp = tokamax_softcap.PallasTritonFlashAttentionVjp()
  f = lambda: vjp(
      (residual, residual), out, out, q, k, v, **_vjp_kwargs(**kwargs)
  )
  _assert_raises(f, error, words)


@pytest.mark.parametrize("name", ["out", "dout", "m", "l"])
def test_vjp_rejects_malformed_residuals_and_cotangents(name):
  q, k, v = _qkv()
  arrays = dict(
      m=jnp.ones((1, 4, T)),
      l=jnp.ones((1, 4, T)),
      out=_ones(SHAPE),
      dout=_ones(SHAPE),
  )
  arrays[name] = arrays[name][..., :-1]
  vjp = tokamax_softcap.PallasTritonFlashAttentionVjp()
  f = lambda: vjp(
      (arrays["m"], arrays["l"]),
      arrays["out"],
      arrays["dout"],
      q,
      k,
      v,
      **_vjp_kwargs(),
  )
  _assert_raises(f, ValueError, (f"`{name}`",))


def test_well_formed_gqa_is_accepted():
  """The checks do not reject what the kernels support: GQA with a bias of
  rank 2, a boolean mask of rank 3, `k_start` ranges, and `q` of another
  dtype than `k` and `v` (the forward casts it)."""
  q, k, v = _qkv(
      k_shape=(1, T, 2, 64), dtypes=(jnp.bfloat16, jnp.float32, jnp.float32)
  )
  mask = base.Mask(
      jnp.ones((4, T, T), bool), k_start=jnp.zeros((T,), jnp.int32)
  )
  op = tokamax_softcap.PallasTritonFlashAttention()
  ba = op.bind(q, k, v, bias=_ones((T, T)), mask=mask, logits_soft_cap=30.0)
  assert ba.arguments["q"] is q
