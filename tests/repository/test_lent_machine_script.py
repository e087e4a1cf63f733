"""reports/speed-cuda/lent_machine.sh, the script that uses a lent GPU machine's cores for a fixed time: it stops
the sweeps it started and nothing else, and brings back the tested runs they touched, in pieces the tool returns,
with what became of each."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "reports" / "speed-cuda" / "lent_machine.sh"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_lent_machine_script_stops_only_its_own_sweeps_and_brings_back_their_runs(tmp_path):
    runs = tmp_path / "runs"
    parts = tmp_path / "parts.txt"
    parts.write_text(
        "# one part that finishes, one that the deadline stops\n"
        f"--preset small --models linear --domains gripper --configs learn/ff --distributions TN --seeds 0 --steps 6 "
        f"--eval-every 3 --no-plan --workers 1 --out {runs}\n\n"
        f"--preset small --models linear --domains gripper --configs learn/ff --distributions N --seeds 0 "
        f"--steps 10000000 --eval-every 50 --no-plan --workers 1 --out {runs} --device cpu\n")
    # one process per part (--workers 1: a pool's worker processes would each start torch anew); the long part
    # checkpoints every 50 steps. The script's deadline is far off: it is stopped through STOP_FILE once the short
    # part is tested and the long one has a last.pt, however slowly a loaded machine trains them
    finished = runs / "gripper-linear-TN-learn-ff-llmcut-s0" / "metrics-test.json"
    resumable = runs / "gripper-linear-N-learn-ff-llmcut-s0" / "last.pt"
    stop = tmp_path / "stop"
    # what ON_TESTED runs on each run tested since the start (the campaign: its whole test grid's evaluation)
    hook = tmp_path / "hook.sh"
    hook.write_text('for run in "$@"; do echo measured > "$run/measured-there.txt"; echo "$run" >> "$0.calls"; done\n')
    hooked = finished.parent / "measured-there.txt"
    # another job's sweep on the same machine: a process whose command line says "tnlib sweep"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "tnlib sweep bystander"])
    try:
        env = {**os.environ, "TRAIN_SECONDS": "500", "STOP_FILE": str(stop), "OUT": str(tmp_path / "out"),
               "PYTHON": sys.executable, "ON_TESTED": f"bash {hook}"}
        script = subprocess.Popen(["bash", str(SCRIPT), str(parts)], cwd=tmp_path, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not (hooked.is_file() and resumable.is_file()) and script.poll() is None:
            time.sleep(0.5)
        stop.touch()
        _, stderr = script.communicate(timeout=240)
        assert script.returncode == 0, stderr
        assert bystander.poll() is None  # still running: only the script's own process groups were stopped
    finally:
        bystander.kill()
    summary = (tmp_path / "out" / "summary.txt").read_text().splitlines()
    assert summary[0] == f"runs-1.tgz -> {runs}"
    assert any(line.startswith("  gripper-linear-TN-learn-ff-llmcut-s0 tested") for line in summary)
    assert any(line.startswith("  gripper-linear-N-learn-ff-llmcut-s0 part-way") for line in summary)
    pieces = sorted((tmp_path / "out").glob("runs-1.tgz.*"))
    assert [piece.name for piece in pieces] == ["runs-1.tgz.00"]
    with tarfile.open(fileobj=io.BytesIO(b"".join(piece.read_bytes() for piece in pieces))) as archive:
        names = archive.getnames()
    assert "gripper-linear-TN-learn-ff-llmcut-s0/metrics-test.json" in names
    # the hook's measurement comes back with the run, which it was given once, and only it
    assert "gripper-linear-TN-learn-ff-llmcut-s0/measured-there.txt" in names
    assert Path(f"{hook}.calls").read_text().splitlines() == [str(finished.parent)]
    # a part-way run stays on the machine that trained it, where a later call resumes it
    assert not any(name.startswith("gripper-linear-N-learn-ff-llmcut-s0") for name in names)
    assert (runs / "gripper-linear-N-learn-ff-llmcut-s0" / "last.pt").is_file()
    machine = (tmp_path / "out" / "machine.txt").read_text()
    assert "cpu: " in machine and "2 processes" in machine
    assert (tmp_path / "out" / "logs.tgz").is_file()
