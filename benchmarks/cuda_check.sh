#!/usr/bin/env bash
# The checks that need a GPU, in one run: the CUDA tests (tests/learning/test_cuda.py), the CPU suite's training,
# planning, model, head and executor tests on the GPU machine, and training speed on data/paper on the GPU and on one core of
# the same machine (benchmarks/bench_training.py). Logs go to $OUT (default: cuda-check/).
#
#   bash benchmarks/cuda_check.sh [all|tests|hgn]   # on a machine with CUDA, torch and tnlib's dependencies
#
# all: the tests and the training benchmark of the three models; tests: the tests; hgn: the tests and STRIPS-HGN's
# training speed on CUDA (batch 64 and 256) and on one core of the same machine.
#
# Where pyperplan is missing, put its wheel in .whl/ first (pip download --no-deps pyperplan==2.1 -d .whl).
set -u
OUT=${OUT:-cuda-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
{
    nvidia-smi -L
    python3 -c "import torch, numpy, numba, scipy; print('torch', torch.__version__, torch.cuda.get_device_name(), \
'numpy', numpy.__version__, 'numba', numba.__version__, 'scipy', scipy.__version__)"
    nproc
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

bench() {  # device batch threads steps seconds -> one table
    timeout "$5" python3 benchmarks/bench_training.py --data data/paper --device "$1" --batch-size "$2" \
        --threads "$3" --steps "$4" --repeats 2 --no-baseline --forward-repeats 5
}

run_tests() {
    timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/learning/test_cuda.py \
        > "$OUT/test-cuda.txt" 2>&1
    echo "tests/learning/test_cuda.py: rc $?"; tail -n 3 "$OUT/test-cuda.txt"
    # the CPU suite on a GPU machine (conftest keeps it on the CPU): training, planning, models, heads, executors
    timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" -n 6 tests/learning/test_training.py \
        tests/learning/test_split_planning.py tests/learning/test_models.py tests/learning/test_nlm.py \
        tests/learning/test_strips_hgn.py tests/learning/test_heads.py \
        tests/foundation/test_executors.py \
        > "$OUT/test-suite-on-gpu-machine.txt" 2>&1
    echo "suite subset: rc $?"; tail -n 3 "$OUT/test-suite-on-gpu-machine.txt"
}

case "${1:-all}" in
    tests) run_tests ;;
    hgn)   # STRIPS-HGN (the authors' layout) on CUDA in the four domains, and on one core of the same machine
        timeout 200 python3 benchmarks/bench_training.py --data data/paper --device cpu --batch-size 64 \
            --threads 1 --steps 10 --repeats 2 --no-baseline --forward-repeats 5 --models hgn \
            > "$OUT/bench-hgn-cpu-b64.txt" 2>&1 &
        cpu_bench=$!
        run_tests
        for b in 64 256; do
            timeout 100 python3 benchmarks/bench_training.py --data data/paper --device cuda --batch-size $b \
                --threads 1 --steps 20 --repeats 2 --no-baseline --forward-repeats 5 --models hgn \
                > "$OUT/bench-hgn-cuda-b$b.txt" 2>&1
        done
        wait $cpu_bench ;;
    all)
        # one CPU core of this machine, beside the GPU work (the setting of the paper-scale runs on 2 cores)
        bench cpu 64 1 10 300 > "$OUT/bench-cpu-b64.txt" 2>&1 &
        cpu_bench=$!
        run_tests
        bench cuda 64 1 20 90 > "$OUT/bench-cuda-b64.txt" 2>&1
        bench cuda 256 1 20 90 > "$OUT/bench-cuda-b256.txt" 2>&1
        wait $cpu_bench ;;
esac
for f in "$OUT"/bench-*.txt; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done
