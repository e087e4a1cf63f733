"""Does this lent machine still train as the lent machines of its kind did? For each run named (a committed run
folder first trained on a GPU of this machine's kind), train its configuration again from scratch for 300 steps
on the card and compare the validation curve with the committed one, value for value.

    PYTHONPATH=CODE TNLIB_DATA=$PWD/data python3 -P reports/speed-cuda/lent_rerun_check.py RUN [RUN ...]

CODE is the tnlib that trained the runs (a campaign's pinned export; this script uses the rerun check of that code,
``tnlib.experiments.rerun_check``). The machine kind names the card and CUDA's version, not torch's: an image
with another torch can round otherwise under the same kind, and this is what finds it. Exit 0 when every curve
is the committed one, 1 when one differs (the runs this machine trains are then not of the committed runs'
rounding: leave them out), 2 when a run named was not first trained on this kind or there is no card.
"""
import sys
from pathlib import Path

import torch

from tnlib.device import machine_kind
from tnlib.experiments.rerun_check import curve_differences
from tnlib.files import read_jsonl

STEPS = 300

if not torch.cuda.is_available():
    print("no CUDA device here: nothing to check", flush=True)
    sys.exit(2)
kind = machine_kind("cuda")
print(f"kind: {kind}; torch {torch.__version__}", flush=True)
differ = other_kind = False
for run in map(Path, sys.argv[1:]):
    first = read_jsonl(run / "machines.jsonl")[0]["machine"]
    if first != kind:
        print(f"{run.name}: first trained on {first}, not this kind", flush=True)
        other_kind = True
        continue
    lines = curve_differences(run, STEPS)
    print(f"{run.name} first {STEPS} steps: " + ("\n  ".join(lines) or "identical"), flush=True)
    differ = differ or bool(lines)
sys.exit(1 if differ else 2 if other_kind or len(sys.argv) < 2 else 0)
