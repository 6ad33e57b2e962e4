"""Runs dump_ttir.py with a form of forms.py: FORM=name python dump_form.py OUT ..."""
import os, runpy, sys
sys.path.insert(0, 'results/h200-2026-12-02-derivative/scripts')
import forms
from tokamax_softcap import patched
patched.pallas_triton_vjp.soft_cap = forms.FORMS[os.environ["FORM"]]
sys.argv = ['dump_ttir.py'] + sys.argv[1:]
runpy.run_path('results/cpu-2026-12-01-compile-probe/dump_ttir.py', run_name='__main__')
print(os.environ["FORM"], 'traced', forms.CALLS)
