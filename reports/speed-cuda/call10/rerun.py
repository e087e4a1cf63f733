# The H200's rerun check against runs call9 trained on another H200 machine: 300 steps again, curves compared
from pathlib import Path
from tnlib.device import machine_kind
from tnlib.experiments.rerun_check import curve_differences
print("kind:", machine_kind("cuda"), flush=True)
for name in ("gripper-nlm-N-fixed-none-llmcut-s0", "gripper-nlm-TN-learn-ff-llmcut-s0"):
    lines = curve_differences(Path("reports/paper-scale-nlm5/runs") / name, 300)
    print(name, "first 300 steps:", "\n  ".join(lines) or "identical", flush=True)
