"""Runs Mosaic GPU kernels on the CPU, in JAX's Mosaic GPU interpreter.

Testing support. JAX's interpreter (`plgpu.kernel(...,
interpret=plgpu.InterpretGPUParams())`, jax 0.12) simulates a kernel's
warpgroups, barriers, shared memory and TMA copies on the CPU, but rejects
two things patch 0031's fused VJP kernel does (the second only before jax
0.12.1, whose interpreter takes an array A):

1. TMA stores that reduce into global memory
   (`plgpu.copy_smem_to_gmem(..., reduction_op="add")`, how the kernel adds
   dq): `patch` adds the shared-memory tile into the destination, clipped to
   it as a TMA store is.
2. `plgpu.wgmma` with its A operand in registers (an array, not a shared
   memory ref: the kernel's dV and dK dots): `patch` multiplies that array
   into the accumulator, as the interpreter does a shared-memory A.

Both additions run as the interpreter's own callbacks do, under its
`fail_on_exception`: an exception in one warpgroup fails the kernel (the
others raise too, rather than wait at a barrier forever). `patch` also
makes every `plgpu.kernel` call interpret. What it cannot show:
timing, and the hazards of asynchrony: the interpreter completes each wgmma
and TMA copy when it is issued (a kernel that reuses a buffer too early
still passes) and detects no races unless asked.
"""

import functools
import inspect
import threading

import jax
from jax._src import callback
from jax._src.pallas.mosaic_gpu.interpret import gpu_callbacks
from jax._src.pallas.mosaic_gpu.interpret import jaxpr_interpret
from jax._src.pallas.mosaic_gpu.interpret import shared_memory
from jax._src.state import types as state_types
import jax.experimental.pallas.mosaic_gpu as plgpu
import numpy as np


def _key(key_as_array):
  return gpu_callbacks.HostAllocationKey.from_array(key_as_array)


def _transforms(transforms):
  # jax 0.12.0.1's interpreter allocates buffers at their logical shape and
  # drops the layout transforms from accesses; 0.12.1's has no such step.
  remove = getattr(gpu_callbacks, "_remove_noop_transforms", tuple)
  return jax.tree.map(int, remove(transforms))


# The interpreter runs warpgroups as threads; a reduce-add's read and store
# must not interleave with another's (two warpgroups may add to one tile).
_REDUCE_LOCK = threading.Lock()


class _AddSmemToGmem(gpu_callbacks.AsyncCopySmemToGmemTask):
  """A TMA store that adds the source tile into its (clipped) destination."""

  def __call__(self, tma_thread_id: int):
    del tma_thread_id  # Unused: no race detection.
    memory = gpu_callbacks._get_shared_memory()  # pylint: disable=protected-access
    value, _, _ = memory.get_buffer_content(
        self.src_allocation_key,
        self.src_access,
        self.thread,
        logging_info=self.logging_info,
    )
    dst_shape = memory.buffer_shape_and_dtype(self.dst_allocation_key).shape
    # pylint: disable-next=protected-access
    store = gpu_callbacks._clip_store_to_shape(
        self.dst_access, value, tuple(dst_shape)
    )
    if store is None:  # Wholly out of bounds.
      return
    access, value = store
    with _REDUCE_LOCK:
      current, _, _ = memory.get_buffer_content(
          self.dst_allocation_key,
          access,
          self.thread,
          logging_info=self.logging_info,
      )
      memory.store_buffer_content(
          self.dst_allocation_key,
          access,
          current + value,
          self.thread,
          logging_info=self.logging_info,
      )


@gpu_callbacks.fail_on_exception
def _add_smem_to_gmem(
    *,
    token,
    mesh_location,
    thread,
    src_allocation_key_as_array,
    src_transforms,
    dst_allocation_key_as_array,
    dst_transforms,
    predicate,
    source_info,
    commit_group,
    reduction_op,
):
  """A TMA store with `reduction_op="add"`, as `_AddSmemToGmem` runs it."""
  del commit_group  # Ignored, as by the interpreter's own TMA stores.
  if reduction_op != "add":
    raise NotImplementedError(f"{reduction_op=}")
  if predicate is not None:
    raise NotImplementedError("predicate")
  memory = gpu_callbacks._get_shared_memory()  # pylint: disable=protected-access
  src = _key(src_allocation_key_as_array)
  dst = _key(dst_allocation_key_as_array)
  memory.execute_async_task(
      _AddSmemToGmem(
          mesh_location=mesh_location,
          thread=thread,
          src_allocation_key=src,
          src_access=memory.access(src, _transforms(src_transforms)),
          dst_allocation_key=dst,
          dst_access=memory.access(dst, _transforms(dst_transforms)),
          source_info=source_info,
      )
  )
  return token


def _copy_smem_to_gmem(copy, *, reduction_op, **kwargs):
  """`copy` (the interpreter's TMA store), with `reduction_op="add"` too."""
  if reduction_op is None:
    return copy(reduction_op=None, **kwargs)
  return _add_smem_to_gmem(reduction_op=reduction_op, **kwargs)


@gpu_callbacks.fail_on_exception
def _wgmma_a_in_registers(
    *,
    token,
    mesh_location,
    thread,
    acc_allocation_key_as_array,
    acc_transforms,
    a,
    b_allocation_key_as_array,
    b_transforms,
    source_info=None,
):
  """`acc += a @ b`, `a` an array, `acc` and `b` the interpreter's buffers."""
  memory = gpu_callbacks._get_shared_memory()  # pylint: disable=protected-access
  logging_info = shared_memory.GPULoggingInfo(
      mesh_location, thread, source_info
  )
  b_key = _key(b_allocation_key_as_array)
  b, _, _ = memory.get_buffer_content(
      b_key,
      memory.access(b_key, _transforms(b_transforms)),
      thread,
      logging_info=logging_info,
  )
  acc_key = _key(acc_allocation_key_as_array)
  acc_access = memory.access(acc_key, _transforms(acc_transforms))
  acc, _, _ = memory.get_buffer_content(
      acc_key, acc_access, thread, logging_info=logging_info
  )
  acc = acc + np.matmul(np.asarray(a), b, dtype=acc.dtype)
  memory.store_buffer_content(
      acc_key, acc_access, acc, thread, logging_info=logging_info
  )
  return token


def _interpret_wgmma(interpret_wgmma, self, eqn, token, get_invals):
  """The interpreter's `wgmma`, with A in registers too."""
  if isinstance(eqn.invars[1].aval, state_types.AbstractRef):
    return interpret_wgmma(self, eqn, token, get_invals)
  acc, a, b, *leaves = get_invals()
  empty = jax.tree.structure([])
  acc_transforms, a_transforms, b_transforms = jax.tree.unflatten(
      jax.tree_util.treedef_tuple(
          (
              eqn.params["acc_transforms_tree"] or empty,
              eqn.params["a_transforms_tree"] or empty,
              eqn.params["b_transforms_tree"] or empty,
          )
      ),
      leaves,
  )
  if jax.tree.leaves(a_transforms):
    raise NotImplementedError("transforms of an A operand in registers")
  resolve = jaxpr_interpret.resolve_ref
  acc, acc_transforms = resolve(eqn.invars[0].aval, acc, acc_transforms)
  b, b_transforms = resolve(eqn.invars[2].aval, b, b_transforms)
  return (
      callback.io_callback(
          functools.partial(_wgmma_a_in_registers, source_info=eqn.source_info),
          gpu_callbacks.TOKEN_SHAPE_DTYPE,
          token=token,
          mesh_location=self.mesh_location,
          thread=self.thread,
          acc_allocation_key_as_array=acc,
          acc_transforms=acc_transforms,
          a=a,
          b_allocation_key_as_array=b,
          b_transforms=b_transforms,
      ),
      [],
  )


def _interpreting(kernel, *args, **kwargs):
  kwargs.setdefault("interpret", plgpu.InterpretGPUParams())
  return kernel(*args, **kwargs)


def patch(monkeypatch) -> None:
  """Makes `plgpu.kernel` interpret, with the two additions above.

  Args:
    monkeypatch: pytest's fixture, which undoes the changes after the test.
  """
  monkeypatch.setattr(
      gpu_callbacks,
      "copy_smem_to_gmem",
      functools.partial(_copy_smem_to_gmem, gpu_callbacks.copy_smem_to_gmem),
  )
  wgmma = inspect.signature(gpu_callbacks.wgmma).parameters
  if "a_is_value" not in wgmma:  # Before jax 0.12.1: add an array A.
    interpreter = jaxpr_interpret.JaxprInterpreter
    original = interpreter._interpret_wgmma_ref_p  # pylint: disable=protected-access

    def interpret_wgmma(self, eqn, token, get_invals):
      return _interpret_wgmma(original, self, eqn, token, get_invals)

    monkeypatch.setattr(interpreter, "_interpret_wgmma_ref_p", interpret_wgmma)
  monkeypatch.setattr(
      plgpu, "kernel", functools.partial(_interpreting, plgpu.kernel)
  )
