import sys; sys.path.insert(0, "tests")
import jax, jax.numpy as jnp
from tokamax._src.ops.attention import base, pallas_triton as upstream, pallas_triton_vjp as upstream_vjp
import tokamax_softcap
from tokamax_softcap import harness, reference, interpret
import test_api as t
HIGHEST = jax.lax.Precision.HIGHEST
with interpret.if_needed():
  q, k, v, dout = t._inputs()
  for name, kw in [("causal", dict(is_causal=True)), ("k_start", dict(mask=base.Mask(k_start=jnp.array([0] * 40 + [40] * 88)))), ("bias", dict(bias=jax.random.normal(jax.random.PRNGKey(1), (2, 4, 128, 128))))]:
    ours = tokamax_softcap.PallasTritonFlashAttention()
    theirs = upstream.PallasTritonFlashAttention(vjp=upstream_vjp.PallasTritonFlashAttentionVjp())
    a = t._grads(lambda q, k, v: ours(q, k, v, precision=HIGHEST, **kw), q, k, v, dout)
    e = t._grads(lambda q, k, v: theirs(q, k, v, precision=HIGHEST, **kw), q, k, v, dout)
    mask = None
    if "is_causal" in kw: mask = jnp.tri(128, dtype=bool)
    if "mask" in kw: mask = kw["mask"].as_array(128, 128)
    r = t._grads(lambda q, k, v: reference.attention(q, k, v, kw.get("bias"), mask=mask), q, k, v, dout)
    la, le, lr = map(jax.tree.leaves, (a, e, r))
    print(name, "ours", ["%.2e" % harness.relative_error(x, y) for x, y in zip(la, lr)], "upstream", ["%.2e" % harness.relative_error(x, y) for x, y in zip(le, lr)], "ours-up", ["%.2e" % harness.relative_error(x, y) for x, y in zip(la, le)])
