"""Registers our ops as tokamax's `"triton"` and `"mosaic"` GPU implementations.

`tokamax.dot_product_attention(..., implementation=...)`, and its default
implementation chain (`("mosaic", "triton", "xla")` on GPUs), look each name
up in `tokamax._src.ops.attention.api.IMPLEMENTATIONS` at call time
(`"mosaic"` as `"mosaic_gpu"` on NVIDIA GPUs). `register` swaps in a mapping
whose `"triton"` entry is our Pallas-Triton op and whose `"mosaic_gpu"`
entry is `pallas_mosaic_gpu`'s (Mosaic GPU's forward, the faster VJP for each
call); `unregister` puts back the very mapping that was there before.
`default_chain` runs what the default chain resolves to.
"""

from collections.abc import Callable, Iterator
import contextlib
from typing import Any

import immutabledict
import jax
from tokamax._src.ops.attention import api
from tokamax_softcap import pallas_mosaic_gpu
from tokamax_softcap import pallas_triton

_TRITON = "triton"
_MOSAIC_GPU = "mosaic_gpu"
# The mapping `register` replaced, while registered.
_replaced: immutabledict.immutabledict | None = None


def register(
    op: pallas_triton.PallasTritonFlashAttention | None = None,
    *,
    mosaic_gpu: Callable[..., Any] | None = None,
):
  """Makes our ops tokamax's `"triton"` and `"mosaic"` GPU implementations.

  Idempotent: registering again replaces the registered ops, and
  `unregister` still restores what was there before the first call.

  Args:
    op: The `"triton"` op; by default `PallasTritonFlashAttention()`.
    mosaic_gpu: The `"mosaic_gpu"` op; by default
      `pallas_mosaic_gpu.PallasMosaicGpuFlashAttention()`. Pass tokamax's
      own (`tokamax._src.ops.attention.pallas_mosaic_gpu`'s
      `PallasMosaicGpuFlashAttention()`) to keep Mosaic GPU's VJP.
  """
  global _replaced
  if op is None:
    op = pallas_triton.PallasTritonFlashAttention()
  if mosaic_gpu is None:
    mosaic_gpu = pallas_mosaic_gpu.PallasMosaicGpuFlashAttention()
  if _replaced is None:
    _replaced = api.IMPLEMENTATIONS
  api.IMPLEMENTATIONS = _replaced.set(_TRITON, op).set(_MOSAIC_GPU, mosaic_gpu)


def unregister():
  """Restores the implementations that were there before `register`.

  A no-op if not registered.
  """
  global _replaced
  if _replaced is not None:
    api.IMPLEMENTATIONS = _replaced
    _replaced = None


def is_registered() -> bool:
  """Returns whether `register` is in effect."""
  return _replaced is not None


@contextlib.contextmanager
def registered(
    op: pallas_triton.PallasTritonFlashAttention | None = None,
    *,
    mosaic_gpu: Callable[..., Any] | None = None,
) -> Iterator[None]:
  """Within this context, our ops are tokamax's (see `register`).

  On exit, restores exactly the state before entry (registered or not, and
  with whichever ops).

  Args:
    op: The `"triton"` op; by default `PallasTritonFlashAttention()`.
    mosaic_gpu: The `"mosaic_gpu"` op (see `register`).

  Yields:
    None.
  """
  global _replaced
  saved = (_replaced, api.IMPLEMENTATIONS)
  register(op, mosaic_gpu=mosaic_gpu)
  try:
    yield
  finally:
    _replaced, api.IMPLEMENTATIONS = saved


def default_chain(q, k, v, **kwargs):
  """Attention as `tokamax.dot_product_attention` with no implementation.

  Calls the ops of tokamax's default chain in turn, as it does, until one
  does not raise `NotImplementedError`; takes the ops' own arguments (e.g. a
  `Mask` with key ranges, which `dot_product_attention` cannot express).

  Args:
    q: `[*B, T, H, D]`.
    k: `[*B, t, h, D]`.
    v: `[*B, t, h, d]`.
    **kwargs: The ops' keyword arguments.

  Returns:
    `[*B, T, H, d]`.

  Raises:
    ExceptionGroup: of every op's `NotImplementedError`, if none runs.
  """
  errors = []
  # pylint: disable-next=protected-access
  for name in api._DEFAULT_IMPLEMENTATIONS:
    if name == "mosaic":  # As `dot_product_attention` resolves it.
      nvidia = "NVIDIA" in jax.devices()[0].device_kind
      name = "mosaic_gpu" if nvidia else "mosaic_tpu"
    try:
      return api.IMPLEMENTATIONS[name](q, k, v, **kwargs)
    except NotImplementedError as e:
      errors.append(e)
  raise ExceptionGroup("no implementation of the default chain ran", errors)
