#!/usr/bin/env bash
# Six paper-scale visitall runs side by side on one lent GPU for a fixed time (the steps each reached measure the
# card shared by six processes).
set -u
OUTD=$OUT/gpu-visitall; mkdir -p "$OUTD"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 \
    OMP_NUM_THREADS=2 TNLIB_PROGRESS=text
{ nvidia-smi -L; python3 -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"; nproc; } > "$OUTD/machine.txt" 2>&1
start=$(date +%s)
for spec in "learn/ff TN 0" "learn/ff TN 1" "fixed/none N 0" "fixed/none N 1" "fixed/none TN 0" "fixed/none TN 1"; do
    set -- $spec
    python3 -m tnlib sweep --preset paper-scale --accept-out-of-reach --domains visitall --configs "$1" \
        --distributions "$2" --seeds "$3" --no-plan --device cuda > "$OUTD/log-${1/\//-}-$2-s$3.txt" 2>&1 &
done
( while true; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> "$OUTD/gpu-util.txt"; sleep 15; done ) &
monitor=$!
sleep "${TRAIN_SECONDS:-420}"
pkill -INT -f "tnlib sweep"; sleep 8; pkill -KILL -f "tnlib sweep"; kill $monitor; sleep 1
echo "trained for $(( $(date +%s) - start )) s, six processes" >> "$OUTD/machine.txt"
cd reports/paper-scale/runs && tar --exclude='.*.lock' --exclude='.*.tmp' -czf "$OUTD/runs.tgz" \
    $(ls -d visitall-* | grep -v 'N-learn-ff')
for d in $(ls -d visitall-* | grep -v 'N-learn-ff'); do echo "$d $(tail -n 1 $d/curves.jsonl | cut -c1-60)"; done
