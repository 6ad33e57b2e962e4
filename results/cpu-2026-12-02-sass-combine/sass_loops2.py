"""Runs Triton's TTIR passes on dumped IR, then counts its loops' SASS.

Usage: python sass_loops2.py DIR [NAME_SUBSTRING], DIR as the compile probe's
dump_ttir.py wrote it (`cpu-2026-12-01-compile-probe/`). `triton.compile`
skips the passes of the stage whose IR it is given, so compiling the dumped
`.ttir` directly (as `cpu-2026-12-01-sass/sass_loops.py` does) leaves out
`make_ttir`'s passes (`combine` among them), which XLA's Triton pipeline runs
on a GPU. This runs them, as Triton 3.6's NVIDIA backend does for sm90, into
DIR/combined/, then runs `sass_loops.py` there (its output: each loop's 30
most frequent opcodes; it writes the `.cubin` and `.sass` files there).
"""
import pathlib, runpy, shutil, sys
from triton._C.libtriton import ir, passes
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend

d = pathlib.Path(sys.argv[1])
out = d / "combined"
out.mkdir(exist_ok=True)
shutil.copy(d / "params.json", out)
for f in sorted(d.glob("*.ttir")):
  ctx = ir.context()
  ir.load_dialects(ctx)
  CUDABackend(GPUTarget("cuda", 90, 32)).load_dialects(ctx)
  mod = ir.parse_mlir_module(str(f), ctx)
  pm = ir.pass_manager(ctx)
  passes.common.add_inliner(pm)
  passes.ttir.add_rewrite_tensor_pointer(pm)
  passes.common.add_canonicalizer(pm)
  passes.ttir.add_combine(pm)
  passes.ttir.add_reorder_broadcast(pm)
  passes.common.add_cse(pm)
  passes.common.add_symbol_dce(pm)
  passes.ttir.add_loop_unroll(pm)
  pm.run(mod, "make_ttir")
  (out / f.name).write_text(str(mod))
sass_loops = pathlib.Path(__file__).parents[1] / "cpu-2026-12-01-sass/sass_loops.py"
sys.argv = [str(sass_loops), str(out), *sys.argv[2:]]
runpy.run_path(str(sass_loops), run_name="__main__")
