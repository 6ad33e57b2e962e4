"""f32 evaluation error of the fitted rational tanh, FMA emulated in f64."""
import sys
import numpy as np
sys.path.append(__import__("os").path.dirname(__file__))
from fit_tanh import fit

f32 = np.float32
def fma(a, b, c):
  return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f32)

def rcp(q, ulp=0):
  r = (1.0 / q.astype(np.float64)).astype(f32)
  return np.nextafter(r, f32(np.inf) if ulp > 0 else f32(-np.inf)) if ulp else r

def rational(z, p, q, X, ulp=0):
  x = np.clip(z, f32(-X), f32(X))
  y = x * x
  P = np.full_like(x, p[-1])
  for c in p[-2::-1]:
    P = fma(P, y, np.full_like(x, c))
  Q = np.full_like(x, q[-1])
  for c in q[-2::-1]:
    Q = fma(Q, y, np.full_like(x, c))
  return (x * P) * rcp(Q, ulp)

if __name__ == "__main__":
  X = float(sys.argv[1]) if len(sys.argv) > 1 else 9.0
  np_, nq = int(sys.argv[2]), int(sys.argv[3])
  p, q, e = fit(np_, nq, X, iters=2000, n=40000)
  print("f64 fit err", e, "ulp", e / 2**-24)
  p32, q32 = p.astype(f32), q.astype(f32)
  print("p =", [float(v) for v in p32]); print("q =", [float(v) for v in q32])
  rng = np.random.default_rng(0)
  z = np.concatenate([rng.uniform(0, 12, 4_000_000), np.exp(rng.uniform(-90, np.log(12), 2_000_000)),
                      np.linspace(8.5, 9.5, 100001)]).astype(f32)
  ref = np.tanh(z.astype(np.float64))
  for ulp in (0, 1, -1):
    t = rational(z, p32, q32, X, ulp)
    # ulp of the reference value (f32 spacing at |ref|)
    sp = np.spacing(np.abs(ref).astype(f32)).astype(np.float64)
    err = np.abs(t - ref) / sp
    i = np.argmax(err)
    print(f"rcp {ulp:+d}: max {err.max():.2f} ulp of t at z={z[i]:.6g}; max t {t.max()!r}; t>1: {(t > 1).sum()}",
          "  neg:", np.abs(rational(-z[:1000], p32, q32, X, ulp) + t[:1000]).max())
