"""A query sequence sharded across devices: results, the blocks each visits.

On a CPU, `conftest.py` gives four devices; the kernels run in the Pallas
interpreter. Each case shards the query sequence four ways (`q_sharding`,
tokamax's `shard_map`), in the natural layout and in the zigzag one
(`context_parallel`), and compares with the unsharded op and the fp32
reference, with the cap active.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import context_parallel
from tokamax_softcap import patched
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

HIGHEST = jax.lax.Precision.HIGHEST
CAP = 5.0
NUM_SHARDS = 4
T = 256
# 1e-6 of each gradient's max|x|: the shards compute each row as the
# unsharded op does, but for which blocks run the causal mask's diagonal (a
# key range instead) and the order in which dk and dv sum over the shards.
SHARDED_ATOL = 1e-6


def test_zigzag_positions():
  assert context_parallel.zigzag_positions(8, 2).tolist() == [
      0, 1, 6, 7, 2, 3, 4, 5
  ]  # fmt: skip
  x = jnp.arange(2 * 16 * 3).reshape(2, 16, 3)
  zigzag = context_parallel.to_zigzag(x, 4, axis=1)
  assert not jnp.array_equal(zigzag, x)
  assert jnp.array_equal(context_parallel.from_zigzag(zigzag, 4, axis=1), x)
  for seq_len, num_shards in ((12, 4), (0, 2), (8, 0)):
    with pytest.raises(ValueError, match="num_shards|seq_len"):
      context_parallel.zigzag_positions(seq_len, num_shards)


def _mask(name, positions):
  """The op's mask and the dense one, for queries at `positions`."""
  t = jnp.arange(T)
  causal = positions[:, None] >= t
  if name == "causal":
    return dict(is_causal=True), causal
  if name == "window":
    window = positions[:, None] < t + 40
    return dict(mask=base.CausalMask(window_size=40)), causal & window
  if name == "docs":  # Documents straddling the shards and blocks.
    starts = jnp.array([0, 50, 120, 200])
    k_start = starts[jnp.searchsorted(starts, positions, side="right") - 1]
    mask = base.Mask(k_start=k_start, is_causal=True)
    return dict(mask=mask), causal & (t >= k_start[:, None])
  raise ValueError(name)


@pytest.mark.parametrize(
    "mask_name,with_bias,cap",
    [
        ("causal", False, CAP),
        ("window", False, CAP),
        ("docs", False, CAP),
        ("causal", True, CAP),
        ("window", False, None),  # The uncapped kernels, sharded.
    ],
)
def test_sharded_equals_unsharded(mask_name, with_bias, cap):
  if jax.device_count() < NUM_SHARDS:
    pytest.skip(f"Needs {NUM_SHARDS} devices; have {jax.device_count()}.")
  # Pre-cap logits of standard deviation ~2 * CAP; uncapped ~1.
  scale = 1.0 if cap is None else (2 * cap) ** 0.5
  q, k, v, bias, dout = numerics.random_inputs(
      (1, T, 4, 32), 2, scale=scale, with_bias=with_bias
  )
  if cap is not None:
    numerics.assert_cap_active(q, k, cap, 5, bias=bias)
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:NUM_SHARDS]), ("seq",))
  sharding = jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec(None, "seq")
  )
  op = tokamax_softcap.PallasTritonFlashAttention()
  natural = jnp.arange(T)
  zigzag = context_parallel.zigzag_positions(T, NUM_SHARDS)

  def grads(positions, **kwargs):
    """dq, dk, dv (dbias), with the queries in the order of `positions`."""
    mask_kwargs, _ = _mask(mask_name, positions)

    def loss(q, k, v, bias):
      out = op(
          q[:, positions],
          k,
          v,
          bias=None if bias is None else bias[:, :, positions],
          logits_soft_cap=cap,
          precision=HIGHEST,
          **mask_kwargs,
          **kwargs,
      )
      return jnp.sum(out * dout[:, positions])

    argnums = (0, 1, 2, 3) if with_bias else (0, 1, 2)
    return jax.jit(jax.grad(loss, argnums))(q, k, v, bias)

  def ref_loss(q, k, v, bias):
    _, dense = _mask(mask_name, natural)
    out = reference.attention(q, k, v, bias, mask=dense, logits_soft_cap=cap)
    return jnp.sum(out * dout)

  argnums = (0, 1, 2, 3) if with_bias else (0, 1, 2)
  expected = jax.grad(ref_loss, argnums)(q, k, v, bias)
  unsharded = grads(natural)
  numerics.assert_close_f32(unsharded, expected)
  for positions in (natural, zigzag):
    # tokamax passes the positions of the natural layout itself; the zigzag
    # one's as the docs do.
    q_indices = None if positions is natural else positions[None]
    sharded = grads(positions, q_sharding=sharding, q_indices=q_indices)
    numerics.assert_close_f32(sharded, unsharded, atol=SHARDED_ATOL)


@pytest.mark.parametrize("mask_name", ["causal", "window"])
def test_a_shards_kernels_take_key_ranges(monkeypatch, mask_name):
  # With `q_indices`, the forward and the VJP give their kernels key ranges
  # by the positions, not a dense mask (which the VJP built before patch
  # 0028) nor the rows' own causal diagonal.
  fwd, vjp = patched.pallas_triton, patched.pallas_triton_vjp
  seen = {}
  decompose_mask, bwd = fwd._decompose_mask, vjp._bwd  # pylint: disable=protected-access

  def spy_decompose_mask(*args, **kwargs):
    mask, is_causal, *ranges = decompose_mask(*args, **kwargs)
    seen["fwd"] = (mask is None, is_causal, ranges[-1] is not None)
    return mask, is_causal, *ranges

  def spy_bwd(q, k, v, bias, mask, dropout_mask, k_start, k_end, *args, **kw):
    seen["vjp"] = (mask is None, kw["is_causal"], k_end is not None)
    return bwd(q, k, v, bias, mask, dropout_mask, k_start, k_end, *args, **kw)

  monkeypatch.setattr(fwd, "_decompose_mask", spy_decompose_mask)
  monkeypatch.setattr(vjp, "_bwd", spy_bwd)
  q, k, v, _, dout = numerics.random_inputs((1, T, 2, 32), 1)
  positions = jnp.arange(T // 2, T)  # The second half of the sequence.
  mask_kwargs, _ = _mask(mask_name, positions)
  op = tokamax_softcap.PallasTritonFlashAttention()

  def loss(q):
    out = op(q, k, v, q_indices=positions[None], **mask_kwargs)
    return jnp.sum(out * dout[:, T // 2 :])

  jax.grad(loss)(q[:, T // 2 :])
  # No dense mask, no causal diagonal, and key ranges (their values: the
  # results of `test_sharded_equals_unsharded`).
  assert seen == {"fwd": (True, False, True), "vjp": (True, False, True)}


def _visited_blocks(positions, mask_name, block_q, block_k):
  """Blocks a shard's forward (and dq) and dk/dv kernels visit.

  As the kernels bound their loops: the forward and the dq kernel visit, for
  each block of queries, the key blocks of the hull of its rows' key ranges;
  the dk/dv kernel, for each key block, the query blocks of `_block_hulls`.
  """
  vjp = patched.pallas_triton_vjp
  mask_kwargs, _ = _mask(mask_name, positions)
  mask = mask_kwargs.get("mask", base.Mask(is_causal=True))
  if isinstance(mask, base.CausalMask):
    mask = base.Mask(causal_mask=mask)
  mask = vjp.causal_window_as_ranges(
      mask, len(positions), q_indices=positions[None]
  )
  assert mask.causal_mask is None  # All key ranges.
  shape = (1, len(positions))  # One head.
  end = jnp.broadcast_to(mask.k_end, shape)
  start = jnp.zeros(shape, end.dtype)
  if mask.k_start is not None:
    start = jnp.broadcast_to(mask.k_start, shape)
  first, last = vjp._row_block_ranges(  # pylint: disable=protected-access
      start, end, num_cols=T, block_rows=block_q
  )
  # The kernels clamp a window's negative `k_start` to the first block.
  first = jnp.maximum(first // block_k, 0)
  forward = jnp.maximum(-(-last // block_k) - first, 0)
  lo, hi = vjp._block_hulls(  # pylint: disable=protected-access
      start, end, num_cols=T, block_rows=block_q, block_cols=block_k
  )
  return int(jnp.sum(forward)), int(jnp.sum(hi - lo))


def _kept_blocks(positions, mask_name, block_q, block_k):
  """Block pairs holding an attended (query, key) pair."""
  _, dense = _mask(mask_name, positions)
  rows, cols = len(positions) // block_q, T // block_k
  blocks = dense.reshape(rows, block_q, cols, block_k)
  return int(jnp.sum(jnp.any(blocks, axis=(1, 3))))


@pytest.mark.parametrize("mask_name", ["causal", "window", "docs"])
def test_shards_visit_only_the_blocks_their_mask_keeps(mask_name):
  # With 32x32 blocks and chunks of 32 rows (zigzag: 2 of them a shard),
  # every block a shard's kernels visit holds an attended pair, and with a
  # causal mask the zigzag shards visit as many as each other.
  block = 32
  layouts = {
      "natural": np.arange(T),
      "zigzag": context_parallel.zigzag_positions(T, NUM_SHARDS),
  }
  rows = T // NUM_SHARDS
  visited = {}
  for layout, order in layouts.items():
    visited[layout] = []
    for i in range(NUM_SHARDS):
      positions = jnp.asarray(order[i * rows : (i + 1) * rows])
      forward, dkdv = _visited_blocks(positions, mask_name, block, block)
      kept = _kept_blocks(positions, mask_name, block, block)
      assert forward == dkdv == kept, (layout, i, forward, dkdv, kept)
      visited[layout].append(kept)
  # Each layout covers the unsharded mask's blocks once.
  whole = _kept_blocks(jnp.arange(T), mask_name, block, block)
  assert sum(visited["natural"]) == sum(visited["zigzag"]) == whole
  if mask_name == "causal":  # 8 chunks of one block: chunk c sees c + 1.
    assert visited["natural"] == [3, 7, 11, 15]
    assert visited["zigzag"] == [9, 9, 9, 9]
