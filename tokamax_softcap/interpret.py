"""Runs tokamax's Pallas-Triton kernels on the CPU, with the Pallas interpreter.

Testing support: lets the real forward and backward kernels (not a reference)
run where there is no GPU, e.g. in CI. Nothing in the ops imports it.

    from tokamax_softcap import interpret

    with interpret.interpret():
      jax.grad(loss)(q, k, v)  # `loss` calls a Pallas-Triton attention op.

Two things stand between the interpreter (`pallas_call(..., interpret=True)`,
jax 0.11) and tokamax's kernels, and `interpret` handles both:

1. The interpreter resolves `pl.program_id` only at a kernel's top level, while
   tokamax reads program ids inside `fori_loop` / `cond` bodies (e.g. for the
   bounds masks of `BlockRef.load`), which fails with "MLIR translation rule
   for primitive 'program_id' not found for platform cpu". Each kernel is
   wrapped to read every program id once, at its top, and `pl.program_id`
   returns those values while the kernel is traced.
2. Ops refuse devices without Triton support. Inside the context the
   Pallas-Triton attention ops (tokamax's and ours) report every device as
   supported; other ops (e.g. Mosaic) keep their checks, so tokamax's
   implementation chains still skip them.

Inside kernels, three primitives are adjusted to compute what Triton computes:

3. `plgpu.dot` with the `F16_F16_F32` algorithm (tokamax's choice for f16),
   which `dot_general` on the CPU rejects, runs as `F32_F32_F32` on the
   operands upcast to f32. That is the same computation: a product of two f16
   values is exact in f32 (11 + 11 significand bits < 24), and both accumulate
   in f32.
4. `plgpu.load(..., other=x)` casts `x` to the loaded dtype, as Triton does.
   The interpreter computes `where(mask, value, x)` instead, which turns a
   boolean block into int32 when `x` is tokamax's default `0` (a bounds-checked
   load of a mask whose length is not a multiple of the block) and then fails
   to lower.
5. `plgpu.elementwise_inline_asm`, which has no CPU lowering, runs the PTX
   instructions the kernels use (`ex2.approx.ftz.f32` and `rcp.approx.ftz.f32`,
   for their exponentials and soft cap) as the functions they approximate,
   `2**x` and `1 / x` in f32, with their flushing of subnormal inputs and
   results to zero. The interpreter tests how the kernels use them; the GPU
   tests the instructions.
"""

from collections.abc import Callable, Iterator
import contextlib
import functools
from unittest import mock

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
import jax.numpy as jnp
from tokamax._src.ops.attention import pallas_triton
from tokamax._src.ops.attention import pallas_triton_vjp

_pallas_call = pl.pallas_call
_program_id = pl.program_id
_dot = plgpu.dot
_load = plgpu.load
_TINY = float(jnp.finfo(jnp.float32).tiny)
_F16 = jax.lax.DotAlgorithmPreset.F16_F16_F32
_F32 = jax.lax.DotAlgorithmPreset.F32_F32_F32


def _with_top_level_program_ids(
    kernel: Callable[..., None], num_axes: int
) -> Callable[..., None]:
  """Returns `kernel`, reading program ids at its top level."""

  @functools.wraps(kernel)
  def wrapped(*refs):
    program_ids = tuple(_program_id(axis) for axis in range(num_axes))

    def program_id(axis: int) -> jax.Array:
      if not 0 <= axis < num_axes:
        # As `pl.program_id` (tokamax probes the grid rank this way).
        raise ValueError(
            f"No program id for axis {axis}: grid rank {num_axes}."
        )
      return program_ids[axis]

    with mock.patch.object(pl, "program_id", program_id):
      return kernel(*refs)

  return wrapped


def _cpu_dot(a, b, *args, precision=None, **kwargs):
  if precision == _F16:
    a, b, precision = a.astype(jnp.float32), b.astype(jnp.float32), _F32
  return _dot(a, b, *args, precision=precision, **kwargs)


def _cpu_load(ref, *args, other=None, **kwargs):
  if other is not None:
    other = jnp.asarray(other, ref.dtype)
  return _load(ref, *args, other=other, **kwargs)


def _flush_subnormals(x: jax.Array) -> jax.Array:
  """Returns `x` (f32) with subnormals as zeros of their sign, as `.ftz`."""
  return jnp.where(jnp.abs(x) < _TINY, jnp.copysign(0.0, x), x)


def _exp2(x: jax.Array) -> jax.Array:
  """`2**x` in f32, as `2**(x - n) * 2**n` for the integer `n` nearest `x`.

  XLA's CPU `exp2` loses accuracy as `|x|` grows (64 ulp at `x = -124`,
  measured with jax 0.11.2); of `|x - n| <= 1/2` it is within about 1 ulp.
  """
  n = jnp.clip(jnp.round(x), -300, 300)  # NaN stays NaN in `x - n`.
  return jnp.ldexp(jnp.exp2(x - n), n.astype(jnp.int32))


# The PTX instructions the kernels give `plgpu.elementwise_inline_asm` (as
# "INSTRUCTION $0, $1;"), as f32 functions.
_PTX_F32 = {
    "ex2.approx.ftz.f32": _exp2,
    "rcp.approx.ftz.f32": lambda x: 1.0 / x,
}


def _cpu_inline_asm(asm, *, args, constraints, pack, result_shape_dtypes):
  """`plgpu.elementwise_inline_asm` of a PTX instruction of `_PTX_F32`.

  Args:
    asm: `"INSTRUCTION $0, $1;"`.
    args: One f32 operand.
    constraints: `"=f,f"`.
    pack: 1.
    result_shape_dtypes: One result, of the operand's shape.

  Returns:
    `[result]`, the instruction's function of the operand.

  Raises:
    NotImplementedError: for any other assembly, constraints, packing or
      operand dtype, naming them.
  """
  instruction = asm.removesuffix(" $0, $1;")
  [x] = args
  if (
      instruction not in _PTX_F32
      or constraints != "=f,f"
      or pack != 1
      or x.dtype != jnp.float32
  ):
    raise NotImplementedError(
        f"No CPU equivalent of inline assembly {asm!r} (constraints"
        f" {constraints!r}, pack {pack}, operand {x.dtype}); the interpreter"
        f" runs {sorted(_PTX_F32)} of one f32 operand."
    )
  [result] = result_shape_dtypes
  y = _flush_subnormals(_PTX_F32[instruction](_flush_subnormals(x)))
  return [y.astype(result.dtype)]


def _interpret_pallas_call(kernel, out_shape, *, grid_spec=None, grid=(), **kw):
  num_axes = len(grid if grid_spec is None else grid_spec.grid)
  kw["interpret"] = True
  kernel = _with_top_level_program_ids(kernel, num_axes)
  return _pallas_call(kernel, out_shape, grid_spec=grid_spec, grid=grid, **kw)


@contextlib.contextmanager
def interpret() -> Iterator[None]:
  """Within this context, every `pl.pallas_call` runs in interpret mode.

  Kernels traced inside the context are interpreted, on any backend, so call
  and differentiate the ops inside it (and under a fresh `jax.jit`: a function
  jitted outside keeps its compiled kernels). Not thread-safe: it patches
  `pl.pallas_call`, `plgpu.dot`, `plgpu.load`,
  `plgpu.elementwise_inline_asm` and the ops' `supported_on` for the
  duration.

  Yields:
    None.
  """
  supported = lambda self, device: True
  with (
      mock.patch.object(pl, "pallas_call", _interpret_pallas_call),
      mock.patch.object(plgpu, "dot", _cpu_dot),
      mock.patch.object(plgpu, "load", _cpu_load),
      mock.patch.object(plgpu, "elementwise_inline_asm", _cpu_inline_asm),
      mock.patch.object(
          pallas_triton.PallasTritonFlashAttention, "supported_on", supported
      ),
      mock.patch.object(
          pallas_triton_vjp.PallasTritonFlashAttentionVjp,
          "supported_on",
          supported,
      ),
  ):
    yield


def is_needed() -> bool:
  """Returns whether the default backend needs interpret mode (no GPU)."""
  return jax.default_backend() != "gpu"


@contextlib.contextmanager
def if_needed() -> Iterator[bool]:
  """Within this context, kernels are interpreted if `is_needed()` (no GPU).

  Yields:
    Whether they are.
  """
  if is_needed():
    with interpret():
      yield True
  else:
    yield False
