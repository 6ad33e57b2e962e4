"""tokamax's attention test harness, without its VJP re-run in the interpreter.

tokamax's harness (`test_base._run_test`, which its attention suite and its
partitioning suite call for every case) differentiates a case twice, with
`jax.vjp` on the same function and inputs and the same cotangent, and asserts
that the second output and gradients equal the first: a check of the
kernels' determinism. In the Pallas interpreter the kernels run on XLA:CPU,
their grid in order, one program at a time, and our kernels add nothing
atomically: there a kernel computes the same values again by construction,
and the re-run took a third of the cases' time (10 of upstream's capped
cases, one process on 2 CPU cores, 2026-12-04: 90-113 s with it, 63 s
without; b34a708). The harness's forward re-run (under `jax.jit`) still
runs.

`reuse_vjp_reruns` makes the second `jax.vjp` of a `_run_test` call return the
first's results in the interpreter; every value the harness compares with its
reference is still computed once, by the kernels. With a GPU it does nothing:
there the re-runs run and the check holds the kernels to determinism.
"""

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import jax
from tokamax._src.ops.attention import test_base
from tokamax_softcap import interpret


class _JaxReusingVjp:
  """`jax` as `test_base` sees it; `vjp` returns a repeated call's results.

  A call repeats an earlier one when its function and its inputs are the same
  objects (the harness passes the same ones; they stay alive while it runs);
  the returned VJP function likewise returns its earlier gradients for the same
  cotangent object.
  """

  def __init__(self):
    self._calls: list[tuple[tuple[Any, ...], tuple[Any, Any]]] = []

  def __getattr__(self, name: str) -> Any:
    return getattr(jax, name)

  def vjp(self, fun: Callable[..., Any], *primals: Any) -> tuple[Any, Any]:
    key = (fun, *primals)
    for earlier, result in self._calls:
      if len(earlier) == len(key) and all(a is b for a, b in zip(earlier, key)):
        return result
    out, vjp_fn = jax.vjp(fun, *primals)
    result = (out, _reusing(vjp_fn))
    self._calls.append((key, result))
    return result


def _reusing(vjp_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """`vjp_fn`, returning its earlier gradients for the same cotangent object."""
  calls = []

  def reusing_vjp_fn(cotangent: Any) -> Any:
    for earlier, grads in calls:
      if earlier is cotangent:
        return grads
    grads = vjp_fn(cotangent)
    calls.append((cotangent, grads))
    return grads

  return reusing_vjp_fn


@contextlib.contextmanager
def reuse_vjp_reruns() -> Iterator[None]:
  """In the interpreter, each `test_base._run_test` call differentiates once.

  Yields:
    Nothing; inside the context (where the Pallas interpreter is needed, i.e.
    without a GPU), every `_run_test` call of tokamax's harness sees a `jax`
    whose `vjp` returns a repeated call's first results. Without the
    interpreter the context changes nothing.
  """
  if not interpret.is_needed():
    yield
    return
  run_test = test_base._run_test  # pylint: disable=protected-access

  def run_test_reusing_vjp(*args, **kwargs):
    with mock.patch.object(test_base, "jax", _JaxReusingVjp()):
      return run_test(*args, **kwargs)

  with mock.patch.object(test_base, "_run_test", run_test_reusing_vjp):
    yield
