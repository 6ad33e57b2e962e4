"""Runs `dump_ttir.py` with f32 dots at TF32, as on a GPU (a CPU picks IEEE).

Usage, from the repository root: python -P tf32.py DUMP_TTIR_ARGS...
"""
import runpy, sys
from tokamax._src import precision
precision._F32_DOT_PRECISION_MAP["cpu"] = precision._F32_DOT_PRECISION_MAP["gpu"]
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
