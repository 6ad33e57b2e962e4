"""Runs `cpu-2026-12-01-compile-probe/dump_ttir.py` with `f16x2.enabled()`.

Usage, from the repository root: python -P dump.py DUMP_TTIR_ARGS...
"""
import pathlib, runpy, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import f16x2
DUMP = (pathlib.Path(__file__).parents[2] / "cpu-2026-12-01-compile-probe"
        / "dump_ttir.py")
sys.argv = [str(DUMP), *sys.argv[1:]]
with f16x2.enabled():
  runpy.run_path(str(DUMP), run_name="__main__")
