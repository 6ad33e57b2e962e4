"""Registers our ops as tokamax's `"triton"` and `"mosaic"` GPU implementations.

`tokamax.dot_product_attention(..., implementation=...)`, and its default
implementation chain (`("mosaic", "triton", "xla")` on GPUs), look each name
up in `tokamax._src.ops.attention.api.IMPLEMENTATIONS` at call time
(`"mosaic"` as `"mosaic_gpu"` on NVIDIA GPUs). `register` swaps in a mapping
whose `"triton"` entry is our Pallas-Triton op and, where tokamax has Mosaic
GPU's op, whose `"mosaic_gpu"` entry is `pallas_mosaic_gpu`'s (Mosaic GPU's
forward, the faster VJP for each call); `unregister` puts back the very
mapping that was there before.
"""

from collections.abc import Iterator
import contextlib

import immutabledict
from tokamax._src.ops.attention import api
from tokamax_softcap import pallas_mosaic_gpu
from tokamax_softcap import pallas_triton

_TRITON = "triton"
_MOSAIC_GPU = "mosaic_gpu"
# The mapping `register` replaced, while registered.
_replaced: immutabledict.immutabledict | None = None


def register(op: pallas_triton.PallasTritonFlashAttention | None = None):
  """Makes our ops tokamax's `"triton"` and `"mosaic"` GPU implementations.

  Idempotent: registering again replaces the registered ops, and
  `unregister` still restores what was there before the first call.

  Args:
    op: The `"triton"` op; by default `PallasTritonFlashAttention()`. The
      `"mosaic_gpu"` entry, if tokamax has one, becomes
      `pallas_mosaic_gpu.PallasMosaicGpuFlashAttention()`.
  """
  global _replaced
  if op is None:
    op = pallas_triton.PallasTritonFlashAttention()
  if _replaced is None:
    _replaced = api.IMPLEMENTATIONS
  implementations = _replaced.set(_TRITON, op)
  if _MOSAIC_GPU in implementations:
    implementations = implementations.set(
        _MOSAIC_GPU, pallas_mosaic_gpu.PallasMosaicGpuFlashAttention()
    )
  api.IMPLEMENTATIONS = implementations


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
) -> Iterator[None]:
  """Within this context, our ops are tokamax's (see `register`).

  On exit, restores exactly the state before entry (registered or not, and
  with whichever op).

  Args:
    op: The `"triton"` op; by default `PallasTritonFlashAttention()`.

  Yields:
    None.
  """
  global _replaced
  saved = (_replaced, api.IMPLEMENTATIONS)
  register(op)
  try:
    yield
  finally:
    _replaced, api.IMPLEMENTATIONS = saved
