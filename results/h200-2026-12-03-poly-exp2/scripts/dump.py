"""Runs `cpu-2026-12-01-compile-probe/dump_ttir.py` with `poly.enabled()`.

Usage, from the repository root: python -P dump.py DUMP_TTIR_ARGS...
"""
import pathlib, runpy, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import poly
DUMP = (pathlib.Path(__file__).parents[2] / "cpu-2026-12-01-compile-probe"
        / "dump_ttir.py")
sys.argv = [str(DUMP), *sys.argv[1:]]
with poly.enabled():
  runpy.run_path(str(DUMP), run_name="__main__")
