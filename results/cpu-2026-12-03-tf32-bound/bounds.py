"""Patch 0025's bound for the f32 configs of the H200 compile grid, on a CPU.

Usage: python bounds.py > bounds.txt
Traces forward + VJP (B1 T2048 H8/4, cap 50, causal, TF32 dots) of the 36 f32
configs of `h200-2026-12-02-smem-bound/scripts/compile_grid.py` with the
device taken for an sm90 GPU, recording the bound where the op calls
`check_shared_memory` (that script's recorder), and prints it beside the bound
and outcome the H200 recorded with the earlier form of the patch
(`h200-2026-12-03-smem-vjp/compile-grid.jsonl`): "OK" where a config the bound
rejects failed to compile and a failure asked for at least the bound, "dv
kernel" where XLA named the smaller dv kernel of patch 0026.
"""
import importlib.util, json, pathlib
from unittest import mock
import jax, jax.numpy as jnp

_RESULTS = pathlib.Path(__file__).parents[1]
_SPEC = importlib.util.spec_from_file_location(
    "grid", _RESULTS / "h200-2026-12-02-smem-bound/scripts/compile_grid.py")
grid = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grid)  # Replaces the check with its recorder.
H200 = 232_448


def trace_bounds(op, head_dim, precision, cc="9.0", causal=True):
  """Traces forward + VJP of `op` (f32, B1 T2048 H8/4, causal unless said, cap
  50) as on a GPU of compute capability `cc`; returns each kernel's (config,
  bound)."""
  q = jax.ShapeDtypeStruct((1, 2048, 8, head_dim), jnp.float32)
  k = jax.ShapeDtypeStruct((1, 2048, 4, head_dim), jnp.float32)
  loss = lambda q, k, v: op(q, k, v, is_causal=causal, logits_soft_cap=50.0,
                            precision=precision).sum()
  device = mock.Mock(platform="gpu", compute_capability=cc, device_kind=cc)
  del grid.NEEDED[:]
  with mock.patch.object(grid.V.backend, "get_default_device",
                         return_value=device):
    jax.eval_shape(jax.grad(loss, argnums=(0, 1, 2)), q, k, k)
  return list(grid.NEEDED)


def main():
  h200 = {}
  for line in open(_RESULTS / "h200-2026-12-03-smem-vjp/compile-grid.jsonl"):
    r = json.loads(line)
    h200[r["kernel"], r["dtype"], r["head_dim"], tuple(r["config"])] = r
  tf32 = jax.lax.DotAlgorithmPreset.TF32_TF32_F32
  for kind, dtype, d, blocks in grid.POINTS:
    if dtype != "float32":
      continue
    op = grid.op_for(kind, blocks)
    bound = [n for c, n in trace_bounds(op, d, tf32)
             if hasattr(c, "block_m1") == (kind == "vjp")][0]
    r = h200[kind, dtype, d, tuple(blocks)]
    requested = r.get("requested")
    if r["compiled"]:
      verdict = "OK" if bound <= H200 else "WRONG: rejects a config that compiled"
    elif bound <= H200:
      verdict = "not rejected"
    else:
      verdict = "OK" if requested >= bound else "dv kernel"
    print(f"{kind:7} {d} {str(blocks):26} bound {bound:7} (was {r['bound']:6})"
          f" compiled {str(r['compiled']):5} requested {requested}: {verdict}")


if __name__ == "__main__":
  main()
