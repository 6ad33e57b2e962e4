"""Lowers forward + VJP for CUDA sm90 on a CPU; writes each kernel's Triton IR.

Usage, from the repository root:
  python -P dump_ttir.py OUTDIR B,T,H,KV,D DTYPE {default,highest,bf16,tf32}
      [VJP_CONFIG_JSON or -] [FWD_CONFIG_JSON]
Causal, soft cap 50 (environment CAUSAL=0: no mask; CAP=<number>: that
cap; CAP=none: no cap). Without configs, the heuristics as on an sm90 GPU
(environment SM=80 or 86: as on that GPU). With BSHAPE=1,8,1024,1024 and
BDT=float32, a bias of that shape and dtype too; with DV=N, v's head dim
is N.
Writes OUTDIR/N-KERNEL.ttir and params.json (each kernel's name, stages,
warps, from the exported module's custom calls).
"""
import json, sys, pathlib
import jax, jax.numpy as jnp
from jax import export
from jax._src.pallas.triton import pallas_call_registration as reg
from jax._src.pallas.triton import lowering

import os
SM = int(os.environ.get("SM", "90"))  # compute capability, e.g. 80 or 90
class _Info:
  compute_capability = f"{SM // 10}.{SM % 10}"
reg.gpu_info_lib.get_gpu_info = lambda: _Info()
from tokamax._src import gpu_utils
gpu_utils.is_sm90 = lambda device: SM // 10 == 9  # heuristics as on that GPU
gpu_utils.is_sm80 = lambda device: SM // 10 == 8
import tokamax_softcap

out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
B, T, H, KV, D = (int(x) for x in sys.argv[2].split(","))
dtype = jnp.dtype(sys.argv[3])
precision = {"default": jax.lax.Precision.DEFAULT, "highest": jax.lax.Precision.HIGHEST, "bf16": jax.lax.DotAlgorithmPreset.BF16_BF16_F32, "tf32": jax.lax.DotAlgorithmPreset.TF32_TF32_F32}[sys.argv[4]]
vjp_config = json.loads(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] != "-" else None
fwd_config = json.loads(sys.argv[6]) if len(sys.argv) > 6 else None

captured = []
orig = lowering.lower_jaxpr_to_triton_module
def capture(jaxpr, grid_mapping, platform, cc, mlir_ctx=None):
  r = orig(jaxpr, grid_mapping, platform, cc, mlir_ctx=mlir_ctx)
  captured.append((jaxpr.debug_info.func_name, r.module.operation.get_asm(enable_debug_info=False)))
  return r
reg.lowering.lower_jaxpr_to_triton_module = capture
vjp_kw = dict(bypass_device_check=True)
if vjp_config:
  from tokamax_softcap import pallas_triton_vjp as pv
  vjp_kw["config"] = pv.Config(**vjp_config)
fwd_kw = dict(bypass_device_check=True, vjp=tokamax_softcap.PallasTritonFlashAttentionVjp(**vjp_kw))
if fwd_config:
  fwd_kw["config"] = tokamax_softcap.Config(**fwd_config)
op = tokamax_softcap.PallasTritonFlashAttention(**fwd_kw)
q = jax.ShapeDtypeStruct((B, T, H, D), dtype)
k = jax.ShapeDtypeStruct((B, T, KV, D), dtype)
# DV=<head_dim of v>: v's head dim differs from q's and k's.
v = jax.ShapeDtypeStruct((B, T, KV, int(os.environ.get("DV", D))), dtype)
args = [q, k, v]
if "BSHAPE" in os.environ:  # A bias of that shape and dtype (BDT).
  shape = tuple(int(x) for x in os.environ["BSHAPE"].split(","))
  args.append(jax.ShapeDtypeStruct(shape, jnp.dtype(os.environ["BDT"])))
def loss(q, k, v, bias=None):
  cap = os.environ.get("CAP", "50")
  return op(q, k, v, bias=bias, is_causal=os.environ.get("CAUSAL", "1") == "1", logits_soft_cap=None if cap == "none" else float(cap), precision=precision).astype(jnp.float32).sum()
grad = jax.grad(loss, argnums=tuple(range(len(args))))
e = export.export(jax.jit(grad), platforms=("cuda",), disabled_checks=[export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")])(*args)
import re
txt = e.mlir_module()
calls = re.findall(r'name = "([^"]+)", num_stages = (\d+) : i32, num_warps = (\d+) : i32', txt)
for i, (name, asm) in enumerate(captured):
  (out / f"{i}-{name}.ttir").write_text(asm)
print(json.dumps(calls))
(out / "params.json").write_text(json.dumps(calls))
