"""Worst case of patch 0023's `soft_cap` error in `s`, in units of 2**-24 |c|.

`s = (s_scale c - o) - (2 s_scale c) r`, `r = rcp(1 + e)`, `e = ex2(u k)`,
`k = 2 log2(e) u_scale / c`, every step rounded to f32 as on the GPU, with
`ex2.approx` up to 2 ulp off (the relative 4 * 2**-24 that the upstream test
asserts for `fast_exp2`, 2 ulp of a result in [1, 2)) and `rcp.approx` up to
1 ulp off, each at every offset in those ranges; the multiply-add is one
rounding (FFMA). Prints, per cap row of the upstream test (the exponential form at every `z`; caps
above 64 take the series for `|z| < 1/4`), the
largest error for `u < 0` and `u >= 0` over 2**18 points of `z = u_scale u /
c` in [-12, 12].
"""

import numpy as np

F = np.float32
LOG2_E = float(np.log2(np.e))


def ulp_steps(x, n):
  out = [x]
  up, down = x, x
  for _ in range(n):
    up = np.nextafter(up, F(np.inf))
    down = np.nextafter(down, F(-np.inf))
    out += [up, down]
  return out


def worst(cap, u_scale, s_scale, offset, z):
  u = (z * cap / u_scale).astype(F)
  k = F(2 * LOG2_E * u_scale / cap)
  a = F(s_scale * cap - offset)
  b = F(2 * s_scale * cap)
  x = (u * k).astype(F)
  e0 = np.exp2(x.astype(np.float64)).astype(F)
  expected = (cap * np.tanh(u.astype(np.float64) * u_scale / cap))
  err = np.zeros(u.shape)
  for e in ulp_steps(e0, 2):
    d = (F(1) + e).astype(F)
    r0 = (1.0 / d.astype(np.float64)).astype(F)
    for r in ulp_steps(r0, 1):
      s = (a.astype(np.float64) - b.astype(np.float64) * r).astype(F)
      s = (s.astype(np.float64) + offset) / s_scale
      err = np.maximum(err, np.abs(s - expected) / (2.0**-24 * cap))
  return u, err


if __name__ == "__main__":
  z = np.linspace(-12.0, 12.0, 1 << 18)
  for row in ((1.0, 1, 1, 0.0), (30.0, 1, 1, 0.0), (50.0, 1, 1, 0.0),
              (50.0, 0.125, LOG2_E, 0.0), (50.0, 0.125, LOG2_E, 80.0),
              (64.0, 1, 1, 0.0), (100.0, 1, 1, 0.0),
              (100.0, 1 / 16, LOG2_E, -3.0), (100.0, 1 / 16, LOG2_E, 0.0)):
    u, err = worst(*row, z)
    print(f"cap {row[0]:5} u_scale {row[1]:<6} s_scale {row[2]:.4f} offset"
          f" {row[3]:5}: u<0 {err[u < 0].max():.2f}  u>=0"
          f" {err[u >= 0].max():.2f}")
