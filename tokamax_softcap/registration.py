"""Registers our op as tokamax's `"triton"` attention implementation.

`tokamax.dot_product_attention(..., implementation="triton")`, and its default
implementation chain (which includes `"triton"` on GPUs), look the name up in
`tokamax._src.ops.attention.api.IMPLEMENTATIONS` at call time. `register`
swaps in a mapping whose `"triton"` entry is our op; `unregister` puts back the
very mapping that was there before.
"""

from collections.abc import Iterator
import contextlib

import immutabledict
from tokamax._src.ops.attention import api
from tokamax_softcap import pallas_triton

_NAME = "triton"
# The mapping `register` replaced, while registered.
_replaced: immutabledict.immutabledict | None = None


def register(op: pallas_triton.PallasTritonFlashAttention | None = None):
  """Makes `op` tokamax's `"triton"` attention implementation.

  Idempotent: registering again replaces the registered op, and `unregister`
  still restores what was there before the first call.

  Args:
    op: The op to register; by default `PallasTritonFlashAttention()`.
  """
  global _replaced
  if op is None:
    op = pallas_triton.PallasTritonFlashAttention()
  if _replaced is None:
    _replaced = api.IMPLEMENTATIONS
  api.IMPLEMENTATIONS = _replaced.set(_NAME, op)


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
  """Within this context, `op` is tokamax's `"triton"` implementation.

  On exit, restores exactly the state before entry (registered or not, and
  with whichever op).

  Args:
    op: The op to register; by default `PallasTritonFlashAttention()`.

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
