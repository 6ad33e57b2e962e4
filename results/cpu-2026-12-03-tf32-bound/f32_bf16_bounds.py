"""Patch 0025's bound for the configs of `f32-bf16-dots.sh`, against Triton 3.6.

Usage: python f32_bf16_bounds.py > f32-bf16-bounds.txt
Traces forward + VJP of each config (f32 inputs, BF16 dots, B1 T2048 H8/4,
causal, cap 50) with the device taken for a GPU of its compute capability,
records the bound of each kernel (the 2026-12-02 compile grid's recorder) and
prints it beside the largest shared memory Triton 3.6 allocated for that
kernel on a CPU (`f32-bf16-dots.txt`).
"""
import importlib.util, json, pathlib
import jax

_HERE = pathlib.Path(__file__).parent
_SPEC = importlib.util.spec_from_file_location("bounds", _HERE / "bounds.py")
bounds = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bounds)  # Its grid's recorder replaces the check.
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
    op = bounds.grid.op_for("forward", fwd).replace(
        vjp=bounds.grid.op_for("vjp", vjp).vjp)
    for config, bound in bounds.trace_bounds(op, d, bf16, cc):
      kind = "vjp" if hasattr(config, "block_m1") else "forward"
      shared = allocated[name, kind]
      print(f"{name} cc {cc} head_dim {d} {kind:7} bound {bound:7,}"
            f" allocated {shared:7,} {'ok' if bound <= shared else 'ABOVE'}")


if __name__ == "__main__":
  main()
