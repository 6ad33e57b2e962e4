"""Sliding windows and packed documents as key ranges, against the reference.

The forward and both VJP kernels skip the blocks that a window (`CausalMask`
with `window_size` or `offset`) or `k_start` / `k_end` ranges mask entirely,
and mask the rest elementwise. Here every such mask is compared, with an
active cap, against the fp32 reference given the same mask as a dense array:
windows that are not multiples of the blocks (64 and 32), of 1 key and of more
than the sequence, a sequence that is not a multiple of the blocks, GQA,
documents of unequal lengths (one shorter than a block), windows combined
with documents, a bias (whose `dbias` covers every block), and no cap; and
`q_start` / `q_end` query ranges, alone, causal, with key ranges and a
window, drawn at random per head, and with a bias.
"""

import chex
import jax
import jax.numpy as jnp
import pytest
import tokamax
from tokamax._src import test_utils
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

CAP = 10.0
T = 200  # Not a multiple of the blocks.
Q, K = jnp.arange(T)[:, None], jnp.arange(T)[None, :]
CAUSAL = Q >= K
# Documents of 37, 100, 5 (shorter than a block) and 58 tokens.
DOC_START = jnp.repeat(
    jnp.array([0, 37, 137, 142]), jnp.array([37, 100, 5, 58])
)
DOC_END = jnp.repeat(
    jnp.array([37, 137, 142, 200]), jnp.array([37, 100, 5, 58])
)
SAME_DOC = (DOC_START[:, None] <= K) & (K < DOC_END[:, None])


def _window(w, offset=0):
  """`CausalMask(offset, window_size=w)` as a dense array."""
  return (K <= Q + offset) & (K > Q + offset - w)


# (id, mask given to the op, the same mask as a dense [T, T] array).
CASES = [
    *(
        (f"window-{w}", base.CausalMask(window_size=w), _window(w))
        for w in (1, 31, 64, 100, T, T + 50)
    ),
    # `local_window_size=(20, 10)`: 20 keys before, 10 after.
    (
        "window-two-sided",
        base.CausalMask(offset=10, window_size=31),
        _window(31, offset=10),
    ),
    (
        "window-negative-offset",
        base.CausalMask(offset=-5, window_size=16),
        _window(16, offset=-5),
    ),
    (
        "docs-causal",
        base.Mask(k_start=DOC_START, is_causal=True),
        SAME_DOC & CAUSAL,
    ),
    ("docs-full", base.Mask(k_start=DOC_START, k_end=DOC_END), SAME_DOC),
    (
        "docs-window",
        base.Mask(
            k_start=DOC_START, causal_mask=base.CausalMask(window_size=30)
        ),
        SAME_DOC & _window(30),
    ),
    (
        "key-padding",
        base.Mask(k_end=jnp.full((T,), 150, jnp.int32)),
        jnp.broadcast_to(K < 150, (T, T)),
    ),
    # `q_start` / `q_end` give each key the queries that attend to it.
    (
        "docs-as-query-ranges",
        base.Mask(q_start=DOC_START, q_end=DOC_END),
        SAME_DOC,
    ),
    (
        "docs-as-query-ranges-causal",
        base.Mask(q_start=DOC_START, q_end=DOC_END, is_causal=True),
        SAME_DOC & CAUSAL,
    ),
    # Queries before 100 attend to no key: whole query blocks are skipped.
    (
        "query-start-100",
        base.Mask(q_start=jnp.full((T,), 100, jnp.int32), is_causal=True),
        (Q >= 100) & CAUSAL,
    ),
    (
        "query-ranges-and-window",
        base.Mask(
            q_end=jnp.full((T,), 170, jnp.int32),
            k_start=DOC_START,
            causal_mask=base.CausalMask(window_size=30),
        ),
        (Q < 170) & SAME_DOC & _window(30),
    ),
]


def _inputs(with_bias):
  # Pre-cap logits `q.k / sqrt(32)` with standard deviation 2x the cap.
  return numerics.random_inputs(
      (2, T, 4, 32), 2, scale=(2 * CAP) ** 0.5, with_bias=with_bias
  )


def _check(
    mask, dense, *, cap=CAP, with_bias=False, op=None, atol=numerics.F32_ATOL
):
  """Compares `op` (by default ours) with the reference for `dense`, whose
  shape is `[T, t]` or `[B, H, T, t]`, within `atol` of the largest value."""
  q, k, v, bias, dout = _inputs(with_bias)
  if cap is not None:
    numerics.assert_cap_active(q, k, cap, 5)
  op = op or tokamax_softcap.PallasTritonFlashAttention()
  f = lambda q, k, v, bias: op(
      q,
      k,
      v,
      bias=bias,
      mask=mask,
      logits_soft_cap=cap,
      precision=jax.lax.Precision.HIGHEST,
  )
  ref = lambda q, k, v, bias: reference.attention(
      q, k, v, bias, mask=dense, logits_soft_cap=cap
  )
  # Rows that attend to no key (with a negative offset) have zero output and
  # add no gradient (the reference averages `v` there): compare the others,
  # with their cotangents zeroed.
  attends = jnp.moveaxis(
      jnp.broadcast_to(jnp.any(dense, axis=-1), (2, 4, T)), 1, 2
  )[..., None]
  dout = jnp.where(attends, dout, 0.0)
  out, f_vjp = jax.vjp(f, q, k, v, bias)
  ref_out, ref_vjp = jax.vjp(ref, q, k, v, bias)
  actual, expected = (out, *f_vjp(dout)), (ref_out, *ref_vjp(dout))
  chex.assert_tree_all_finite(actual)
  # `atol` in units of the case's largest reference value: with a window of
  # one key, `dq` and `dk` are 0 (one weight of 1 has no gradient).
  scale = max(float(jnp.max(jnp.abs(e))) for e in expected if e is not None)
  for i, (a, e) in enumerate(zip(actual, expected)):
    if e is None:
      continue
    if i in (0, 1):  # out, dq
      assert not jnp.any(jnp.where(attends, 0.0, a))
      a, e = (jnp.where(attends, x, 0.0) for x in (a, e))
    test_utils.assert_trees_all_close(
        a, e, atol=atol * scale, rtol=numerics.F32_RTOL
    )


@pytest.mark.parametrize(
    "mask, dense", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_matches_reference(mask, dense):
  _check(mask, dense)


def test_window_with_untileable_vjp_config():
  """Blocks the causal loops cannot tile (`block_n1 < block_m1`): the window
  runs as key ranges only."""
  config = tokamax_softcap.VjpConfig(
      block_m1=64,
      block_n1=32,
      block_m2=32,
      block_n2=64,
      num_warps=4,
      num_stages=1,
  )
  vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(config=config)
  _check(
      base.CausalMask(window_size=31),
      _window(31),
      op=tokamax_softcap.PallasTritonFlashAttention(vjp=vjp),
  )


def test_random_ranges_per_head():
  """`k_start` / `k_end` drawn per batch, head and row, some rows empty."""
  keys = jax.random.split(jax.random.PRNGKey(7), 2)
  k_start = jax.random.randint(keys[0], (2, 4, T), 0, T)
  k_end = jnp.minimum(
      k_start + jax.random.randint(keys[1], (2, 4, T), -20, 90), T
  )
  dense = (k_start[..., None] <= K) & (K < k_end[..., None])
  _check(base.Mask(k_start=k_start, k_end=k_end), dense)


def test_random_query_ranges_per_head():
  """`q_start` / `q_end` drawn per batch, head and key, some keys empty."""
  keys = jax.random.split(jax.random.PRNGKey(8), 2)
  q_start = jax.random.randint(keys[0], (2, 4, T), 0, T)
  q_end = jnp.minimum(
      q_start + jax.random.randint(keys[1], (2, 4, T), -20, 90), T
  )
  dense = (q_start[..., None, :] <= Q) & (Q < q_end[..., None, :])
  _check(base.Mask(q_start=q_start, q_end=q_end), dense)


def test_query_ranges_with_bias_gives_every_dbias_block():
  _check(
      base.Mask(q_start=DOC_START, q_end=DOC_END, is_causal=True),
      SAME_DOC & CAUSAL,
      with_bias=True,
  )


def test_window_with_bias_gives_every_dbias_block():
  _check(base.CausalMask(window_size=31), _window(31), with_bias=True)


@pytest.mark.parametrize("case", ["window-31", "docs-causal"])
def test_uncapped(case):
  # Without the cap the pre-cap logits reach 115 (unscaled q . k ~650), not
  # 10: their f32 rounding (an ulp of 7.6e-6 at 115) moves the weights ~10x
  # as much, and the VJP's logits, recomputed in other blocks than the
  # forward's, round differently from those of `lse` (with q and k on a grid
  # that makes q . k exact in f32, dq's error is at most 2.9e-6). Measured
  # (CPU interpreter, Intel Xeon, 2026-12-06), over both cases, seeds 0-9 and
  # the draws of jax 0.12.0.1 and 0.12.1 (whose `jax.random.normal` differs
  # by up to 5.8e-6 relative, through a more accurate `erf_inv`; the error
  # is the same with either jax running the kernel): up to 1.35e-5 of the
  # largest value (window-31, seed 9); seed 0, the test's, 1.26e-5 (dq,
  # docs-causal, 0.12.1's draws). The bound is twice that; a wrong mask is
  # off by O(1).
  ((mask, dense),) = [c[1:] for c in CASES if c[0] == case]
  _check(mask, dense, cap=None, atol=6 * numerics.F32_ATOL)


def test_local_window_size_through_dot_product_attention():
  """`tokamax.dot_product_attention(local_window_size=(20, 10))`."""
  q, k, v, _, dout = _inputs(False)
  f = lambda q, k, v: tokamax.dot_product_attention(
      q,
      k,
      v,
      local_window_size=(20, 10),
      logits_soft_cap=CAP,
      precision=jax.lax.Precision.HIGHEST,
      implementation="triton",
  )
  ref = lambda q, k, v: reference.attention(
      q, k, v, mask=_window(31, offset=10), logits_soft_cap=CAP
  )
  out, f_vjp = jax.vjp(f, q, k, v)
  ref_out, ref_vjp = jax.vjp(ref, q, k, v)
  numerics.assert_close_f32((out, *f_vjp(dout)), (ref_out, *ref_vjp(dout)))
