"""The VJP's kernels one at a time (all at the VJP op's one config).

A variant of the patched `pallas_triton_vjp` module whose `_bwd` runs only
the kernels `PROBE.outputs` names (a tuple of output tuples: 0 dq, 1 dk,
2 dv; e.g. `((0,), (2,))` runs a dq kernel and a dv kernel), at the VJP op's
config, and gives zeros for the gradients none computes. The series' own
dispatch (dq and dk in one kernel, dv apart past `_DKDV_REGISTERS`) is
`((0, 1), (2,))`. `PROBE` is thread-local, so configs can be traced in
threads. The shared-memory check is off: XLA's compile error reports what
does not fit.
"""
import threading

from tokamax_softcap import patched

_OLD = """\
  grid = max(grid_dkdv, grid_dq)
  if dkdv_registers > _DKDV_REGISTERS:
    # dv in a kernel of its own, so that each kernel holds one accumulator
    # (the dv one recomputes the logits: 8 dots a block instead of 7).
    dq, dk, _, ds = vjp_call("pallas_flash_attention_vjp", grid, (0, 1, 3))
    dv = vjp_call("pallas_flash_attention_vjp_dv", grid_dkdv, (2,))[2]
  else:
    dq, dk, dv, ds = vjp_call("pallas_flash_attention_vjp", grid, (0, 1, 2, 3))
"""
_NEW = """\
  grid = max(grid_dkdv, grid_dq)
  outs = [None] * 4
  for sel in PROBE.outputs:
    g = grid_dq if set(sel) <= {0} else grid_dkdv if 0 not in sel else grid
    name = "pallas_flash_attention_vjp_" + "".join(map(str, sel))
    res = vjp_call(name, g, sel)
    for i in sel:
      outs[i] = res[i]
  dq, dk, dv, ds = outs
  if dq is None:
    dq = jnp.zeros_like(q)
  if dk is None:
    dk = jnp.zeros(dk_shape, dk_dtype)
  if dv is None:
    dv = jnp.zeros(dv_shape, dv_dtype)
"""

PROBE = threading.local()
PROBE.outputs = ((0, 1), (2,))


def module():
  src = patched.patched_source("pallas_triton_vjp")
  assert src.count(_OLD) == 1
  mod = patched.load_source(
      "probe_pallas_triton_vjp", src.replace(_OLD, _NEW), "probe_vjp.py"
  )
  mod.PROBE = PROBE
  mod.check_shared_memory = lambda config, needed: None
  return mod
