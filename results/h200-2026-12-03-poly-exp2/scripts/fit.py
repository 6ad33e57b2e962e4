import numpy as np
# minimax relative-error fit of 2**f on [-0.5,0.5] with p(0)=1 fixed, via Lawson's IRLS
x = np.cos(np.linspace(0, np.pi, 4001)) * 0.5
y = np.exp2(x.astype(np.float64))
for deg in (3,4,5,6):
  A = np.stack([x**k for k in range(1, deg+1)], 1) / y[:,None]
  b = (y - 1) / y
  w = np.ones_like(x)
  for it in range(300):
    c, *_ = np.linalg.lstsq(A * np.sqrt(w)[:,None], b*np.sqrt(w), rcond=None)
    err = np.abs(A @ c - b)
    w = w * err; w /= w.sum()
  coeffs = np.concatenate([[1.0], c])
  # evaluate in float32 Horner
  xf = np.linspace(-0.5, 0.5, 200001).astype(np.float32)
  cf = coeffs.astype(np.float32)
  p = np.full_like(xf, cf[-1])
  for k in range(deg-1, -1, -1):
    p = (p * xf + cf[k]).astype(np.float32)
  rel = np.abs(p.astype(np.float64) / np.exp2(xf.astype(np.float64)) - 1)
  print(deg, "max rel f64 fit %.3g" % err.max(), "f32 horner %.3g = 2^%.1f" % (rel.max(), np.log2(rel.max())), [float(v) for v in cf])
