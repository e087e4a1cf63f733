#!/usr/bin/env bash
# A lent GPU machine used whole for a fixed time: each line of PARTS holds the arguments of one `tnlib sweep`
# process. A line with `--device cuda` trains on the card; every other line trains on one CPU thread with CUDA
# hidden. After TRAIN_SECONDS the processes this script started -- only those: each runs in a process group of its
# own, so sweeps of other jobs on the same machine are never touched -- get SIGTERM (run files are replaced
# atomically: a run stopped anywhere resumes from its last checkpoint). The tested runs they touched come back as
# one archive per results folder, cut into pieces of at most 15 MiB (the tool returns no larger file), beside a
# summary of which runs were tested and which stopped part-way. Part-way runs stay on the machine only: a later call
# on the same warm machine resumes them, and each run trains on one kind of machine, as machines.jsonl records.
#
#   TRAIN_SECONDS=450 OUT=$OUT bash reports/speed-cuda/lent_machine.sh PARTS
#
# Before the call: pyperplan's wheel in .whl/ (`.venv/bin/python -m pip download --no-deps pyperplan==2.1 -d .whl`,
# `.whl` in .git/info/exclude, carry [".whl"]): the lent machine reaches no package index. After it, for each line
# `runs-K.tgz -> FOLDER` of summary.txt: `cat runs-K.tgz.* | tar -xz -C FOLDER`.
#
# STOP_FILE=PATH ends the training early once that file exists (what a test uses instead of a wall-clock guess).
#
# ON_TESTED="COMMAND ..." runs, while the sweeps train, COMMAND with the folders of the runs tested since the start
# appended, each run once, a few seconds after its test (the campaign evaluates them on the whole test grid there,
# so that what the run's machine measures comes back with it). It is stopped with the sweeps at the deadline; where
# they all end before it, what they tested last is measured in the time left. Its output goes into the logs.
#
# TNLIB_CODE=DIR trains with the tnlib in DIR (a campaign's pinned export, carried) instead of the checkout's: it
# goes first on the path and Python's safe-path mode keeps the working directory off it.
set -u -m
PARTS=$(realpath "${1:?usage: lent_machine.sh PARTS (one line of tnlib sweep arguments per process)}")
OUTD=$(realpath -m "${OUT:-lent-out}")
PYTHON=${PYTHON:-python3}
LOGS=$(mktemp -d)
CODE=$(realpath "${TNLIB_CODE:-$PWD}")
[ -n "${TNLIB_CODE:-}" ] && export PYTHONSAFEPATH=1
mkdir -p "$OUTD"
SITE=""
if compgen -G ".whl/*.whl" > /dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$LOGS/site" .whl/*.whl \
        || exit 1
    SITE="$LOGS/site:"
fi
export PYTHONPATH="$SITE$CODE${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OMP_NUM_THREADS=1 TNLIB_PROGRESS=text
{
    command -v nvidia-smi > /dev/null && nvidia-smi -L
    "$PYTHON" -c "import torch, numpy, tnlib; from tnlib.device import machine_kind; print('torch', torch.__version__, \
'numpy', numpy.__version__, 'tnlib from', tnlib.__file__); print('cpu:', machine_kind('cpu')); \
print('cuda:', machine_kind('cuda') if torch.cuda.is_available() else 'none')"
    echo "cores: $(getconf _NPROCESSORS_ONLN)"
} > "$OUTD/machine.txt" 2>&1
start=$(date +%s)
marker="$LOGS/start"
touch "$marker"
groups=()
outs=()
n=0
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    n=$((n + 1))
    read -r -a args <<< "$line"
    for ((i = 0; i < ${#args[@]} - 1; i++)); do [ "${args[i]}" = "--out" ] && outs+=("${args[i + 1]}"); done
    if [[ " $line " == *" --device cuda "* ]]; then
        "$PYTHON" -m tnlib sweep "${args[@]}" > "$LOGS/part-$n.txt" 2>&1 &
    else
        CUDA_VISIBLE_DEVICES= "$PYTHON" -m tnlib sweep "${args[@]}" > "$LOGS/part-$n.txt" 2>&1 &
    fi
    groups+=("$!")  # with job control (set -m) each background job leads a process group of its own
done < "$PARTS"
tested_not_measured() {  # the run folders the sweeps tested since the start that ON_TESTED has not yet measured
    local out run
    for out in $(printf '%s\n' "${outs[@]}" | sort -u); do
        for run in "$out"/*/; do
            run=${run%/}
            [ "$run/metrics-test.json" -nt "$marker" ] && [ ! -e "$LOGS/measured-${run##*/}" ] && echo "$run"
        done
    done
    return 0
}
measure() {  # ON_TESTED on the run folders given (word splitting of ON_TESTED is meant: a command line), under
    # LIMIT where set (`timeout S`)
    [ $# -gt 0 ] || return 0
    ${LIMIT:-} $ON_TESTED "$@" >> "$LOGS/on-tested.txt" 2>&1
    for run in "$@"; do touch "$LOGS/measured-${run##*/}"; done
}
hook=""
if [ -n "${ON_TESTED:-}" ]; then
    ( while true; do measure $(tested_not_measured); sleep 5; done ) &
    hook=$!
fi
monitor=""
if command -v nvidia-smi > /dev/null; then
    ( while true; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; uptime; sleep 30
      done >> "$OUTD/gpu-util.txt" ) &
    monitor=$!
fi
running() {  # whether any process of the sweeps' groups is still there
    local group
    for group in "${groups[@]}"; do kill -0 -- "-$group" 2> /dev/null && return 0; done
    return 1
}
deadline=$((start + ${TRAIN_SECONDS:-450}))
stopped() { [ -n "${STOP_FILE:-}" ] && [ -e "$STOP_FILE" ]; }
while [ "$(date +%s)" -lt "$deadline" ] && running && ! stopped; do sleep 1; done
for group in "${groups[@]}"; do kill -TERM -- "-$group" 2> /dev/null; done
for _ in 1 2 3 4 5 6 7 8 9 10; do running || break; sleep 1; done
for group in "${groups[@]}"; do kill -KILL -- "-$group" 2> /dev/null; done
if [ -n "$hook" ]; then
    kill -- "-$hook" 2> /dev/null
    # sweeps that ended before the deadline leave time to measure what they tested last (a measurement the stop
    # cut is made again)
    left=$((deadline - $(date +%s)))
    if [ "$left" -gt 0 ] && ! stopped; then LIMIT="timeout $left" measure $(tested_not_measured); fi
fi
[ -n "$monitor" ] && kill -- "-$monitor" 2> /dev/null
echo "trained for $(( $(date +%s) - start )) s, $n processes" >> "$OUTD/machine.txt"
tar -C "$LOGS" --exclude=site -czf "$OUTD/logs.tgz" .
: > "$OUTD/summary.txt"
k=0
for out in $(printf '%s\n' "${outs[@]}" | sort -u); do
    [ -d "$out" ] || continue
    k=$((k + 1))
    touched=$(cd "$out" && find . -mindepth 2 -newer "$marker" -printf '%h\n' | sed 's|^\./||' | grep -v '^\.' \
              | sort -u)
    [ -n "$touched" ] || continue
    tested=$(for run in $touched; do if [ -f "$out/$run/metrics-test.json" ]; then echo "$run"; fi; done)
    if [ -n "$tested" ]; then
        (cd "$out" && tar --exclude='.*' -cz $tested) | split -b 15M -d - "$OUTD/runs-$k.tgz."
    fi
    echo "runs-$k.tgz -> $out" >> "$OUTD/summary.txt"
    for run in $touched; do
        last=$(tail -n 1 "$out/$run/curves.jsonl" 2> /dev/null | cut -c1-48)
        if [ -f "$out/$run/metrics-test.json" ]; then echo "  $run tested, $last"
        else echo "  $run part-way, $last"; fi
    done >> "$OUTD/summary.txt"
done
cat "$OUTD/summary.txt"
