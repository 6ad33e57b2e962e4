"""A load-balanced layout for a query sequence sharded across devices.

tokamax shards the query sequence with an op's `q_sharding` (a
`NamedSharding` whose sequence axis is sharded): each device gets a chunk
of the queries, the keys and values whole, and the chunk's positions as
`q_indices`, by which this package's kernels bound their loops (patch 0028:
with a causal mask or a window, a shard skips the key blocks its queries
cannot see). In the natural layout, contiguous chunks, a causal mask leaves
the shards unequal work: shard `i` of `n` visits `2 * i + 1` times the first
shard's blocks, and the step waits for the last.

The zigzag layout (as in Llama 3's context parallelism, arXiv:2407.21783)
cuts the sequence into `2 * n` chunks and
gives shard `i` chunks `i` and `2 * n - 1 - i`: with a causal mask every
shard attends to the same number of key blocks (when a chunk's length is a
multiple of the kernels' query block). Permute the queries (and whatever is
given per query, e.g. packed documents' `k_start`) with `to_zigzag`, pass
`q_indices=zigzag_positions(...)[None]`, and put the output back with
`from_zigzag`:

    positions = context_parallel.zigzag_positions(seq_len, num_shards)
    out = op(
        context_parallel.to_zigzag(q, num_shards),
        k,
        v,
        is_causal=True,
        q_indices=positions[None],
        q_sharding=sharding,  # The sequence axis over `num_shards` devices.
    )
    out = context_parallel.from_zigzag(out, num_shards)

Keys and values stay in their order.
"""

import jax.numpy as jnp
from jaxtyping import Array, Int  # pylint: disable=g-multiple-import,g-importing-member
import numpy as np


def zigzag_positions(seq_len: int, num_shards: int) -> Int[Array, "T"]:
  """Returns the positions of the zigzag layout's rows, in its order.

  Row `j` of the layout holds position `zigzag_positions(...)[j]`: shard `i`
  (rows `i * T / n` to `(i + 1) * T / n`) holds chunk `i`, then chunk
  `2 * n - 1 - i`, of the `2 * n` chunks of `T / (2 * n)` positions.

  Args:
    seq_len: `T`, a multiple of `2 * num_shards`.
    num_shards: `n`, the number of devices the sequence is sharded over.

  Raises:
    ValueError: if `num_shards` is not positive, or `seq_len` is not a
      positive multiple of `2 * num_shards`.
  """
  if num_shards < 1:
    raise ValueError(f"`num_shards` must be positive; got {num_shards}.")
  if seq_len < 1 or seq_len % (2 * num_shards):
    raise ValueError(
        f"`seq_len` must be a positive multiple of 2 * `num_shards` ="
        f" {2 * num_shards}; got {seq_len}."
    )
  chunks = np.arange(seq_len).reshape(2 * num_shards, -1)
  order = [c for i in range(num_shards) for c in (i, 2 * num_shards - 1 - i)]
  return jnp.asarray(chunks[order].reshape(-1), jnp.int32)


def to_zigzag(x: Array, num_shards: int, axis: int = -3) -> Array:
  """Returns `x` with its `axis` (the sequence) in the zigzag layout.

  Args:
    x: E.g. queries `[*B, T, H, D]` (`axis=-3`), or `k_start` `[*B, H, T]`
      (`axis=-1`).
    num_shards: As `zigzag_positions`.
    axis: The sequence axis of `x`.

  Raises:
    ValueError: as `zigzag_positions`, for the length of `axis`.
  """
  return jnp.take(x, zigzag_positions(x.shape[axis], num_shards), axis=axis)


def from_zigzag(x: Array, num_shards: int, axis: int = -3) -> Array:
  """Returns `x` (in the zigzag layout along `axis`) in the natural order.

  The inverse of `to_zigzag`: e.g. the attention output `[*B, T, H, d]`.

  Raises:
    ValueError: as `zigzag_positions`, for the length of `axis`.
  """
  positions = np.asarray(zigzag_positions(x.shape[axis], num_shards))
  return jnp.take(x, jnp.asarray(np.argsort(positions)), axis=axis)
