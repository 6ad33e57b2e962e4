"""Patch 0023's `soft_cap` in the Pallas interpreter, on the upstream test's z.

The error in `s` against `c tanh(z)` in f64, in units of 2**-24 `|c|`, the
largest over the 4088 regular points of `z` that `test_fast_exp2_and_soft_cap`
takes (for caps above 64 only `|z| >= 1/4`, where the exponential form
applies). The interpreter runs `ex2.approx` as XLA's CPU `exp2` after a range
reduction (about 1 ulp) and `rcp.approx` as `1 / x`, correctly rounded
(`tokamax_softcap.interpret`).

Usage: python3 interpreter.py > interpreter.txt
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
import numpy as np

from tokamax_softcap import interpret
from tokamax_softcap import patched

from simulate import ROWS  # The upstream test's rows, beside this file.

# As the test: 4096 points, 8 of them special values, 2 at `z = +-0.2499`.
NUM_REGULAR = 4096 - 8


def main():
  z = np.linspace(-12.0, 12.0, NUM_REGULAR - 2)
  z = np.concatenate([z, [0.2499, -0.2499]])
  with interpret.interpret():
    for cap, u_scale, s_scale, offset in ROWS:
      u = (z * cap / u_scale).astype(np.float32)

      def kernel(u_ref, s_ref, cap=cap, u_scale=u_scale, s_scale=s_scale,
                 offset=offset):
        s_ref[...] = patched.pallas_triton_vjp.soft_cap(
            u_ref[...], cap, u_scale=u_scale, s_scale=s_scale,
            s_offset=offset,
        )[0]

      out = jax.ShapeDtypeStruct(u.shape, jnp.float32)
      s = np.asarray(pl.pallas_call(kernel, out)(u)).astype(np.float64)
      s = (s + offset) / s_scale
      z_u = u.astype(np.float64) * u_scale / cap
      err = np.abs(s - cap * np.tanh(z_u)) / (2.0**-24 * cap)
      if cap > 64:
        err, z_u = err[np.abs(z_u) >= 0.25], z_u[np.abs(z_u) >= 0.25]
      print(f"cap {cap:5} u_scale {u_scale:<6} s_scale {s_scale:.4f} offset"
            f" {offset:5}: u<0 {err[z_u < 0].max():.2f}  u>=0"
            f" {err[z_u >= 0].max():.2f}")


if __name__ == "__main__":
  main()
