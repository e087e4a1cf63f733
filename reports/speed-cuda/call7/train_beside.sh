#!/usr/bin/env bash
# One lent GPU machine for a fixed time, used whole: the two paper-scale visitall runs not yet started (fixed/none N
# and TN, seed 0) train side by side on its GPU, and the NLM five-seed sweep's blocksworld, ferry and gripper runs
# train on its CPU cores (one process per part of the grid, one thread each). Run folders come back as archives.
#
#   TRAIN_SECONDS=450 bash reports/speed-cuda/call7/train_beside.sh     # pyperplan's wheel in .whl/
#
# Background jobs of a script ignore SIGINT, so they are stopped with SIGTERM: every file a run writes is replaced
# atomically, so a run stopped anywhere resumes from its last checkpoint.
set -u
OUTD=$(realpath -m "${OUT:-call7}")
LOGS=/tmp/train-logs
mkdir -p "$OUTD" "$LOGS"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 \
    OMP_NUM_THREADS=1 TNLIB_PROGRESS=text
{
    nvidia-smi -L
    python3 -c "import torch, numpy; from tnlib.device import machine_kind; print('torch', torch.__version__, \
'numpy', numpy.__version__); print('cpu:', machine_kind('cpu')); print('cuda:', machine_kind('cuda'))"
    nproc
} > "$OUTD/machine.txt" 2>&1
cat "$OUTD/machine.txt"
start=$(date +%s)
touch /tmp/train-start
for dist in N TN; do
    python3 -m tnlib sweep --preset paper-scale --accept-out-of-reach --domains visitall --configs fixed/none \
        --distributions $dist --seeds 0 --no-plan --device cuda > "$LOGS/gpu-visitall-fixed-none-$dist-s0.txt" 2>&1 &
done
# domain, configuration, distribution, seeds: 14 processes (the three parts split in two by seed are those whose
# runs the CPU here found slowest)
parts=(
    "blocksworld learn/ff TN 0 1 2" "blocksworld learn/ff TN 3 4"
    "blocksworld fixed/none N 0 1 2" "blocksworld fixed/none N 3 4"
    "blocksworld fixed/none TN 0 1 2 3 4"
    "ferry learn/ff N 0 1 2 3 4" "ferry learn/ff TN 0 1 2 3 4"
    "ferry fixed/none N 0 1 2 3 4" "ferry fixed/none TN 0 1 2 3 4"
    "gripper learn/ff N 0 1 2" "gripper learn/ff N 3 4"
    "gripper learn/ff TN 0 1 2 3 4"
    "gripper fixed/none N 0 1 2 3 4" "gripper fixed/none TN 0 1 2 3 4"
)
for part in "${parts[@]}"; do
    set -- $part
    CUDA_VISIBLE_DEVICES= python3 -m tnlib sweep --preset converged --out reports/converged/nlm5/runs \
        --domains "$1" --configs "$2" --distributions "$3" --seeds "${@:4}" --device cpu \
        > "$LOGS/cpu-$1-${2/\//-}-$3-s$4.txt" 2>&1 &
done
( while true; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> "$OUTD/gpu-util.txt"
  uptime >> "$OUTD/gpu-util.txt"; sleep 30; done ) &
monitor=$!
sleep "${TRAIN_SECONDS:-450}"
pkill -TERM -f "tnlib sweep"; sleep 5; pkill -KILL -f "tnlib sweep"; kill $monitor; sleep 1
echo "trained for $(( $(date +%s) - start )) s, $(( ${#parts[@]} + 2 )) processes" >> "$OUTD/machine.txt"
tar -C "$LOGS" -czf "$OUTD/logs.tgz" .
tar -C reports/paper-scale/runs --exclude='.*' -czf "$OUTD/runs-paper-scale.tgz" \
    visitall-nlm-N-fixed-none-llmcut-s0 visitall-nlm-TN-fixed-none-llmcut-s0
cd reports/converged/nlm5/runs
touched=$(find . -mindepth 2 -newer /tmp/train-start -printf '%h\n' | sort -u | sed 's|^\./||' | grep -v '^\.')
tar --exclude='.*' -czf "$OUTD/runs-nlm5.tgz" $touched
for d in $touched; do
    if [ -f "$d/metrics-test.json" ]; then echo "$d tested, $(tail -n 1 $d/curves.jsonl | cut -c1-40)"
    else echo "$d part-way, $(tail -n 1 $d/curves.jsonl | cut -c1-40)"; fi
done | tee "$OUTD/summary.txt"
cd ../../../paper-scale/runs
for d in visitall-nlm-N-fixed-none-llmcut-s0 visitall-nlm-TN-fixed-none-llmcut-s0; do
    echo "$d $(tail -n 1 $d/curves.jsonl | cut -c1-60)"; done | tee -a "$OUTD/summary.txt"
