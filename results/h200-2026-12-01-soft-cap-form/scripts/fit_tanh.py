"""Fits t(x) = x P(x^2) / Q(x^2) to tanh on [0, X], minimax relative error (Lawson)."""
import sys
import numpy as np

def fit(np_, nq, X, iters=400, n=20000):
  # Chebyshev-like points in x, dense near 0 and X.
  x = X * (1 - np.cos(np.linspace(0, np.pi, n))) / 2
  x = x[1:]
  y = x * x
  f = np.tanh(x) / x
  w = np.ones_like(x) / len(x)
  for it in range(iters):
    # Linear LSQ: P(y) - f Q(y) = 0, q0 = 1, relative (divide by f).
    A = np.concatenate([y[:, None] ** np.arange(np_ + 1)[None],
                        -(f[:, None] * y[:, None] ** np.arange(1, nq + 1)[None])], 1) / f[:, None]
    b = np.ones_like(x)
    sw = np.sqrt(w)
    c, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
    p = c[:np_ + 1]; q = np.concatenate([[1.0], c[np_ + 1:]])
    err = np.polyval(p[::-1], y) / np.polyval(q[::-1], y) / f - 1
    w = w * np.abs(err) ** 1.0 + 1e-300
    w /= w.sum()
  return p, q, np.max(np.abs(err))

if __name__ == "__main__":
  X = float(sys.argv[1]) if len(sys.argv) > 1 else 9.0
  for np_, nq in [(2, 2), (3, 2), (3, 3), (4, 3), (4, 4), (5, 3), (5, 4), (6, 3)]:
    p, q, e = fit(np_, nq, X)
    print(np_, nq, f"max rel err {e:.3g} = {e / 2**-24:.2f} ulp(2^-24)")
