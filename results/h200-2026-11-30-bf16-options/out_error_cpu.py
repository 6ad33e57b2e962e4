"""CPU (interpreter): does an `out_error` residual (the forward's f32 output minus its bf16 rounding) give the VJP an exact `delta`?

Loads the series (0001-0016) with a change that was not kept: the forward
also stores `out_error = acc - bf16(acc)` and the VJP takes `delta` from `out
+ out_error`. Prints bf16 dq/dk/dv errors of pr-check (verify's CPU size,
causal) without and with it, then how far `out` and `out + out_error` are
from the f32 reference's output and how far each `delta` is from the
reference's. Run from the repository root at 98a4fb1: `python -P
results/h200-2026-11-30-bf16-options/out_error_cpu.py`.
"""
import jax, jax.numpy as jnp
from tokamax._src import jaxtyping as jt
from tokamax_softcap import harness, interpret, patched, reference

FWD = [
    ('''    def _zero_store():
      out_ref, l_ref, m_ref = args[-3:]  # pylint: disable=unbalanced-tuple-unpacking
      if l_ref is not None:
        l_ref.store(jnp.zeros(l_ref.shape, l_ref.dtype))
      if m_ref is not None:
        m_ref.store(jnp.zeros(m_ref.shape, m_ref.dtype))
      out_ref.store(jnp.zeros(out_ref.shape, out_ref.dtype))
''', '''    def _zero_store():
      for ref in args[-4:]:
        if ref is not None:
          ref.store(jnp.zeros(ref.shape, ref.dtype))
'''),
    ('''    out_ref,
    l_ref,
    m_ref,
    block_k: int,''', '''    out_ref,
    l_ref,
    m_ref,
    out_error_ref,
    block_k: int,'''),
    ('''  for i in range(split_d_out):
    out_ref.at[:, block.ds(i, block_d_out)].store(accs[i].astype(out_ref.dtype))
''', '''  for i in range(split_d_out):
    out = accs[i].astype(out_ref.dtype)
    out_ref.at[:, block.ds(i, block_d_out)].store(out)
    if out_error_ref is not None:
      error = accs[i] - out.astype(accs[i].dtype)
      out_error_ref.at[:, block.ds(i, block_d_out)].store(error.astype(out_error_ref.dtype))
'''),
    ('''    return_residuals: bool,
    q_k_dot_precision: jax.lax.DotAlgorithmPreset,
    weights_v_dot_precision: jax.lax.DotAlgorithmPreset,
) -> tuple[Float[Array, "T H d"], Residuals | None]:''', '''    return_residuals: bool,
    q_k_dot_precision: jax.lax.DotAlgorithmPreset,
    weights_v_dot_precision: jax.lax.DotAlgorithmPreset,
    return_out_error: bool = False,
) -> tuple[Float[Array, "T H d"], Any]:'''),
    ('''  out_specs = [out_spec, l_spec, m_spec]
  out_shapes = [out_shape, l_shape, m_shape]

  out, l, m = block.pallas_call(''', '''  out_error = return_residuals and return_out_error
  out_specs = [out_spec, l_spec, m_spec, out_spec if out_error else None]
  out_shapes = [out_shape, l_shape, m_shape, out_shape if out_error else None]

  out, l, m, out_error = block.pallas_call('''),
    ('''  return out, (m, l)
''', '''  if out_error is not None:
    return out, (m, l, out_error)
  return out, (m, l)
'''),
    ('''        return_residuals=return_residuals,
''', '''        return_residuals=return_residuals,
        return_out_error=normalize_output and config.split_k == 1,
'''),
    ('''  ) -> tuple[Float[Array, "*B T H d"], Residuals | None]:
    if paging_info''', '''  ) -> tuple[Float[Array, "*B T H d"], Any]:
    if paging_info'''),
]
VJP = [
    ('''    for name, x in zip(("m", "l"), arguments["residuals"]):''',
     '''    for name, x in zip(("m", "l"), arguments["residuals"][:2]):'''),
    ('''  m, l = residuals
''', '''  m, l, *out_error = residuals
'''),
    ('''  delta = jnp.einsum(
      "qhd,qhd->hq", out, dout, preferred_element_type=jnp.float32
  )''', '''  if out_error:
    out = out.astype(jnp.float32) + out_error[0].astype(jnp.float32)
  delta = jnp.einsum(
      "qhd,qhd->hq", out, dout, preferred_element_type=jnp.float32
  )'''),
    ('''Residuals = base.Residuals
''', '''Residuals = (
    base.Residuals
    | tuple[Float[Array, "*B H T"], Float[Array, "*B H T"], Float[Array, "*B T H d"]]
)
'''),
]


def source(name):
  s = patched.patched_source(name)
  for a, b in FWD if name == "pallas_triton" else VJP:
    assert s.count(a) == 1, (name, a)
    s = s.replace(a, b)
  return "from typing import Any\n" + s, f"<{name} + out_error>"


cfg = harness.cpu_sized(harness.CONFIGS["pr-check"])
op_kwargs, mask = harness.mask_variant(cfg, "causal")
q, k, v, _, dout = harness.make_inputs(cfg, jnp.bfloat16, cfg.logits_soft_cap, False)
f32 = lambda x: x.astype(jnp.float32)
ref = lambda q, k, v: reference.attention(
    q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap
)
out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
expected = ref_vjp(f32(dout))
with interpret.interpret():
  for label, mods in (
      ("series", {"pallas_triton": patched.pallas_triton, "pallas_triton_vjp": patched.pallas_triton_vjp}),
      ("out_error", patched.load_modules("out_error", source)),
  ):
    op = mods["pallas_triton"].PallasTritonFlashAttention(
        vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True),
        bypass_device_check=True,
    )
    f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=jax.lax.Precision.DEFAULT, **op_kwargs)
    _, pull = jax.vjp(f, q, k, v)
    errors = [f"{harness.relative_error(a, e):.2e}" for a, e in zip(pull(dout), expected)]
    print(label, "dq dk dv", errors, flush=True)
  with jt.disable_jaxtyping():
    out, res = op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, return_residuals=True, **op_kwargs)
  exact = f32(out) + f32(res[2])
  print("out vs ref", f"{harness.relative_error(out, out_ref):.2e}", "out + out_error vs ref", f"{harness.relative_error(exact, out_ref):.2e}")
  delta = lambda o: jnp.einsum("bqhd,bqhd->bhq", f32(o), f32(dout))
  print("max |delta - delta_ref|: bf16 out", float(jnp.max(jnp.abs(delta(out) - delta(out_ref)))), "out + out_error", float(jnp.max(jnp.abs(delta(exact) - delta(out_ref)))))
