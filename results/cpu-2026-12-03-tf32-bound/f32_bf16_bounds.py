"""Patch 0025's bound for the configs of `f32-bf16-dots.sh`, against Triton 3.6.

Usage: python f32_bf16_bounds.py > f32-bf16-bounds.txt
Traces forward + VJP of each config (f32 inputs, BF16 dots, B1 T2048 H8/4,
causal, cap 50) with the device taken for a GPU of its compute capability,
records the bound of each kernel (the 2026-12-02 compile grid's recorder) and
prints it beside the largest shared memory Triton 3.6 allocated for that
kernel on a CPU (`f32-bf16-dots.txt`).
"""
import importlib.util, json, pathlib
from unittest import mock
import jax, jax.numpy as jnp

_HERE = pathlib.Path(__file__).parent
_SPEC = importlib.util.spec_from_file_location(
    "grid", _HERE.parent / "h200-2026-12-02-smem-bound/scripts/compile_grid.py")
grid = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grid)  # Replaces the check with its recorder.
CONFIGS = {  # name: (compute capability, head_dim, forward, VJP)
    "a": ("8.6", 128, (64, 64, 4, 2), (32, 64, 64, 32, 4, 2)),
    "b": ("9.0", 128, (64, 128, 4, 2), (64, 64, 64, 64, 4, 2)),
    "c": ("9.0", 256, (64, 64, 4, 3), (64, 64, 64, 64, 8, 2)),
    "d": ("8.0", 256, (64, 64, 4, 2), (32, 64, 64, 32, 4, 3)),
    "e": ("9.0", 128, (32, 64, 4, 3), (16, 64, 64, 16, 4, 3)),
}


def main():
  allocated = {}
  for line in open(_HERE / "f32-bf16-dots.txt"):
    name, _, _, row = line.split(" ", 3)
    row = json.loads(row)
    kind = "forward" if "fwd" in row["kernel"] else "vjp"
    allocated[name, kind] = max(allocated.get((name, kind), 0), row["shared"])
  bf16 = jax.lax.DotAlgorithmPreset.BF16_BF16_F32
  for name, (cc, d, fwd, vjp) in CONFIGS.items():
    op = grid.op_for("forward", fwd).replace(
        vjp=grid.op_for("vjp", vjp).vjp)
    q = jax.ShapeDtypeStruct((1, 2048, 8, d), jnp.float32)
    k = jax.ShapeDtypeStruct((1, 2048, 4, d), jnp.float32)
    loss = lambda q, k, v: op(q, k, v, is_causal=True, logits_soft_cap=50.0,
                              precision=bf16).sum()
    device = mock.Mock(platform="gpu", compute_capability=cc, device_kind=cc)
    del grid.NEEDED[:]
    with mock.patch.object(grid.V.backend, "get_default_device",
                           return_value=device):
      jax.eval_shape(jax.grad(loss, argnums=(0, 1, 2)), q, k, k)
    for config, bound in grid.NEEDED:
      kind = "vjp" if hasattr(config, "block_m1") else "forward"
      shared = allocated[name, kind]
      print(f"{name} cc {cc} head_dim {d} {kind:7} bound {bound:7,}"
            f" allocated {shared:7,} {'ok' if bound <= shared else 'ABOVE'}")


if __name__ == "__main__":
  main()
