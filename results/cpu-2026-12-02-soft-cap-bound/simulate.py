"""Worst case of patch 0023's `soft_cap` error in `s`, in units of 2**-24 |c|.

A model of the kernels' computation, `s = (A - o) - 2 A r` with `A =
s_scale c`, `r = rcp(1 + e)`, `e = ex2(u k)` and `k = 2 log2(e) u_scale / c`,
each step rounded to f32 as on the GPU (the last one a fused multiply-add,
one rounding), in which `ex2.approx` returns any f32 within 2 ulp of the
correctly rounded `2**(u k)` and `rcp.approx` any within 1 ulp of the
correctly rounded `1 / (1 + e)`. These are the model's assumptions (the H200
measured less: `h200-2026-12-02-sign.md`), not vendor-documented bounds.

For each row of caps (upstream's test's), the largest error for `u < 0` and
`u >= 0` over every f32 `u` in two bands of `|z|` (`z = u_scale u / c`):
[2**-24, 2**-21], where the largest for `u >= 0` lies (at `|z|` near 2e-7),
and [2**-8, 3], where the largest for `u < 0` lies (for caps above 64, whose
kernels take tanh's series below `|z| = 1/4`, from 1/4 only); and over 2**18
sampled points of `z` in [-12, 12] for the rest of the range.

Usage: python3 simulate.py > simulate.txt (about 20 minutes on one core).
"""

import numpy as np

F32 = np.float32
LOG2_E = float(np.log2(np.e))
CHUNK = 1 << 21


def _steps(x: np.ndarray, n: int) -> list[np.ndarray]:
  """Returns `x` and the f32 values up to `n` ulp above and below it."""
  out, up, down = [x], x, x
  for _ in range(n):
    up = np.nextafter(up, F32(np.inf))
    down = np.nextafter(down, F32(-np.inf))
    out += [up, down]
  return out


def errors(u, cap, u_scale, s_scale, offset):
  """Returns the model's largest error at each f32 `u`, in units."""
  k = F32(2 * LOG2_E * u_scale / cap)
  a = np.float64(F32(s_scale * cap - offset))
  b = np.float64(F32(2 * s_scale * cap))
  x = (u * k).astype(F32)
  e0 = np.exp2(x.astype(np.float64)).astype(F32)
  expected = cap * np.tanh(u.astype(np.float64) * u_scale / cap)
  err = np.zeros(u.shape)
  for e in _steps(e0, 2):
    d = (F32(1) + e).astype(F32)
    r0 = (1.0 / d.astype(np.float64)).astype(F32)
    for r in _steps(r0, 1):
      s = (a - b * r.astype(np.float64)).astype(F32).astype(np.float64)
      s = (s + offset) / s_scale
      err = np.maximum(err, np.abs(s - expected) / (2.0**-24 * cap))
  return err


def every_f32(lo: float, hi: float):
  """Yields every positive f32 in [lo, hi], in chunks."""
  first = np.array(lo, F32).view(np.int32)
  last = np.array(hi, F32).view(np.int32)
  for start in range(int(first), int(last) + 1, CHUNK):
    bits = np.arange(start, min(start + CHUNK, int(last) + 1), dtype=np.int32)
    yield bits.view(F32)


def worst(cap, u_scale, s_scale, offset):
  """Returns `(worst for u < 0, worst for u >= 0)` for one row."""
  bands = [(0.25, 3.0)] if cap > 64 else [(2.0**-24, 2.0**-21), (2.0**-8, 3.0)]
  neg = pos = 0.0
  for z_lo, z_hi in bands:
    for mag in every_f32(z_lo * cap / u_scale, z_hi * cap / u_scale):
      neg = max(neg, errors(-mag, cap, u_scale, s_scale, offset).max())
      pos = max(pos, errors(mag, cap, u_scale, s_scale, offset).max())
  z = np.linspace(-12.0, 12.0, 1 << 18)
  u = (z * cap / u_scale).astype(F32)
  err = errors(u, cap, u_scale, s_scale, offset)
  return max(neg, err[u < 0].max()), max(pos, err[u >= 0].max())


ROWS = (  # (c, u_scale, s_scale, offset), as upstream's test.
    (1.0, 1.0, 1.0, 0.0),
    (30.0, 1.0, 1.0, 0.0),
    (50.0, 1.0, 1.0, 0.0),
    (50.0, 0.125, LOG2_E, 0.0),
    (50.0, 0.125, LOG2_E, 80.0),
    (64.0, 1.0, 1.0, 0.0),
    (100.0, 1.0, 1.0, 0.0),
    (100.0, 1 / 16, LOG2_E, 0.0),
    (100.0, 1 / 16, LOG2_E, -3.0),
    (1e6, 1.0, 1.0, 0.0),
)

if __name__ == "__main__":
  for row in ROWS:
    neg, pos = worst(*row)
    print(
        f"cap {row[0]:5} u_scale {row[1]:<6} s_scale {row[2]:.4f} offset"
        f" {row[3]:5}: u<0 {neg:.2f}  u>=0 {pos:.2f}",
        flush=True,
    )
