"""`harness_reruns`: in the interpreter, tokamax's harness differentiates once.

With a stand-in `_run_test` (a fixture) and with the harness's own.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tokamax._src.ops.attention import test_base
from tokamax_softcap import interpret
import harness_reruns  # pylint: disable=g-bad-import-order


def _counting(calls):
  def f(x, y):
    calls.append("forward")
    return jnp.sin(x) * y

  return f


def _harness_like_run(f, x, y, dout):
  """The harness's two differentiations, as `test_base._run_test` makes them."""
  out, vjp_fn = test_base.jax.vjp(f, x, y)
  grads = vjp_fn(dout)
  out2, vjp_fn2 = test_base.jax.vjp(f, x, y)
  return out, grads, out2, vjp_fn2(dout)


@pytest.fixture
def in_interpreter(monkeypatch):
  monkeypatch.setattr(interpret, "is_needed", lambda: True)
  monkeypatch.setattr(test_base, "_run_test", lambda run: run())


def test_second_vjp_reuses_the_first_in_the_interpreter(in_interpreter):
  del in_interpreter
  calls = []
  f = _counting(calls)
  x, y, dout = jnp.arange(3.0), jnp.full(3, 2.0), jnp.ones(3)
  with harness_reruns.reuse_vjp_reruns():
    out, grads, out2, grads2 = test_base._run_test(  # pylint: disable=protected-access
        lambda: _harness_like_run(f, x, y, dout)
    )
  assert calls == ["forward"]
  assert out2 is out and grads2 is grads
  # The first results are the function's own.
  np.testing.assert_array_equal(out, jnp.sin(x) * y)
  np.testing.assert_array_equal(grads[0], jnp.cos(x) * y)
  np.testing.assert_array_equal(grads[1], jnp.sin(x))


def test_other_functions_inputs_and_cotangents_run_anew(in_interpreter):
  del in_interpreter
  calls = []
  f, g = _counting(calls), _counting(calls)
  x, y = jnp.arange(3.0), jnp.full(3, 2.0)
  x_copy = jnp.array(x)
  dout, dout_copy = jnp.ones(3), jnp.ones(3)

  def run():
    ns = test_base.jax
    _, vjp_fn = ns.vjp(f, x, y)
    ns.vjp(g, x, y)
    _, vjp_fn2 = ns.vjp(f, x_copy, y)
    grads = vjp_fn(dout)
    return grads, vjp_fn(dout_copy), vjp_fn(2 * dout), vjp_fn2

  with harness_reruns.reuse_vjp_reruns():
    grads, grads_copy, grads_twice, _ = test_base._run_test(run)  # pylint: disable=protected-access
  assert calls == ["forward"] * 3
  assert grads_copy is not grads
  np.testing.assert_array_equal(grads_twice[0], 2 * grads[0])


def test_each_run_test_call_starts_afresh(in_interpreter):
  del in_interpreter
  calls = []
  f = _counting(calls)
  x, y = jnp.arange(3.0), jnp.full(3, 2.0)
  with harness_reruns.reuse_vjp_reruns():
    for _ in range(2):
      test_base._run_test(lambda: test_base.jax.vjp(f, x, y))  # pylint: disable=protected-access
  assert calls == ["forward"] * 2


def test_nothing_changes_without_the_interpreter(monkeypatch):
  monkeypatch.setattr(interpret, "is_needed", lambda: False)
  run_test = test_base._run_test  # pylint: disable=protected-access
  with harness_reruns.reuse_vjp_reruns():
    assert test_base._run_test is run_test  # pylint: disable=protected-access
    assert test_base.jax is jax


def _attention(q, k, v, bias=None, precision=None):
  del bias
  s = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=precision)
  p = jax.nn.softmax(s, axis=-1)
  return jnp.einsum("bhqk,bkhd->bqhd", p, v, precision=precision)


def _harness_run(traces, factor=1.0):
  """Upstream's `_run_test` on a counting op; returns how often it traced."""

  def impl(q, k, v, *, bias=None):
    traces.append("impl")
    return _attention(q, k, v, bias) * factor

  q, k, v = (
      jax.random.normal(key, (1, 8, 2, 4))
      for key in jax.random.split(jax.random.key(0), 3)
  )
  test_base._run_test(  # pylint: disable=protected-access
      q,
      k,
      v,
      impl=impl,
      impl_supports_precisions=False,
      ref_impl=_attention,
      atol=1e-5,
  )
  return len(traces)


@pytest.mark.parametrize("needed", [True, False])
def test_upstream_harness_differentiates_once_in_the_interpreter(
    monkeypatch, needed
):
  monkeypatch.setattr(interpret, "is_needed", lambda: needed)
  with harness_reruns.reuse_vjp_reruns():
    traces = _harness_run([])
  # The forward (its re-run under `jax.jit` is cached) and each
  # differentiation.
  assert traces == (2 if needed else 3)


def test_upstream_harness_still_compares_with_its_reference(monkeypatch):
  monkeypatch.setattr(interpret, "is_needed", lambda: True)
  with harness_reruns.reuse_vjp_reruns():
    with pytest.raises(AssertionError):
      _harness_run([], factor=1.001)
