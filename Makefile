# tnlib: two commands for a fresh machine with Python 3.11+.
#   make reproduce   run the main job on the small embedded default, its reports in reports/ (all but speed.md,
#                    truncated_normal_peers.md, speed-cuda/, converged/, plan-set/ and paper-scale*/, made apart)
#   make test        run the test suite
#   make paper-scale the paper-scale campaign (reports/paper-scale-nlm5/README.md): resumes it, one lane per core
#   make paper-scale-snapshot     stage its runs for a commit (the last step of a stretch of work)
#   make paper-scale-rerun-check  does its pinned code still make the committed curves here
#   make paper-scale-lent         ready a lent GPU machine's call that trains whole runs of it, and print the call
#   make prune-kernel-cache       remove the numba cache files edits of tnlib's kernels left behind
# Both create .venv/ and install what they need from PyPI when it is missing or stale.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.tnlib-installed
# Pinned so pip takes the CPU wheel where one is provided locally; an unpinned torch pulls CUDA packages.
TORCH  ?= torch==2.13.0
# Two threads match the CI machines; raise for a bigger box.
export OMP_NUM_THREADS ?= 2
# glibc returns big tensors to the OS on every step otherwise (2-3x slower NLM training, see shared specs).
export MALLOC_MMAP_MAX_ ?= 0
export MALLOC_TRIM_THRESHOLD_ ?= 17179869184

.PHONY: reproduce test env bench clean-env prune-kernel-cache paper-scale paper-scale-standing paper-scale-rerun-check \
	paper-scale-snapshot paper-scale-lent paper-scale-scheduler paper-scale-worker

env: $(STAMP)

# pip runs --quiet (its log is pages long), so each step says first what it does and about how long it takes.
$(STAMP): pyproject.toml
	@echo "make env: setting up $(VENV)/ (tnlib and what its notebooks and tests need, from PyPI; a few minutes the first time)"
	@# a link to another checkout's environment: installing would point its tnlib and its notebooks' kernel here
	@if [ -L $(VENV) ]; then printf '%s\n' "make env: $(VENV) links to $$(readlink $(VENV)), another checkout's" \
		"environment; installing would point that checkout's tnlib and notebook kernel at this one. Run make there," \
		"or remove the link here and let make create $(VENV)/" >&2; exit 1; fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "make env: [1/4] upgrading pip"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "make env: [2/4] installing $(TORCH), the CPU wheel (about 200 MB: a minute or two)"
	$(PY) -m pip install --quiet "$(TORCH)"
	@echo "make env: [3/4] installing tnlib and its dependencies (numpy, scipy, numba, plotly, papermill, jupyter, pytest, ...)"
	$(PY) -m pip install --quiet -e ".[test,bench]"
	@echo "make env: [4/4] registering the notebooks' Python kernel"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)
	@echo "make env: done; the commands are in $(VENV)/bin/ (. $(VENV)/bin/activate puts them on the PATH)"

reproduce: $(STAMP)
	$(PY) -m tnlib reproduce

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(PY) benchmarks/bench_truncated_normal.py
	$(PY) benchmarks/accuracy_truncated_normal.py
	$(PY) benchmarks/bench_heuristics.py
	$(PY) benchmarks/bench_search.py
	$(PY) benchmarks/compare_lmcut_fast_downward.py
	$(PY) benchmarks/bench_labelling.py
	$(PY) benchmarks/bench_training.py
	$(PY) benchmarks/bench_learned_search.py

clean-env:
	rm -rf $(VENV)

# numba keeps every compilation of a kernel whose line moved (tnlib.kernel_cache): these go, those in use stay
prune-kernel-cache: $(STAMP)
	@$(PY) -c "from tnlib.kernel_cache import prune_stale_caches as p; n, size = p(); print(f'removed {n} stale numba cache files ({size / 1e6:.1f} MB)')"

# The paper-scale campaign: every run resumes from its committed checkpoint, so the same command continues it
# wherever it stands. One code trains every run: tnlib as of CAMPAIGN_CODE, exported by git archive into
# .campaign/ and imported from there (python -P: not from the checkout, which moves on), with the checkout's data
# and results folders; a change to that commit waits until the campaign ends, or the campaign starts again. One
# one-thread lane per core (two spinning BLAS threads beside another process slowed training 2-50x), each running
# the stages in order; the second lane starts a little later and skips the runs the first holds. OpenBLAS runs its
# Haswell (AVX2) kernels on every machine: they are the ones it picks on the AVX2 machines that trained the
# campaign's first runs, and on an AVX-512 machine they give those runs' curves value for value, where the AVX-512
# kernels OpenBLAS would pick there round NLM's training otherwise (reports/paper-scale-nlm5/README.md, One code).
CAMPAIGN_CODE := 38b9e834
CAMPAIGN_TREE := .campaign/$(CAMPAIGN_CODE)
CAMPAIGN_RUNS := reports/paper-scale-nlm5/runs
CAMPAIGN_ENV := nice -n 19 env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1 TNLIB_PROGRESS=text \
	TNLIB_DATA=$(CURDIR)/data
CAMPAIGN_PY := $(CAMPAIGN_ENV) PYTHONPATH=$(CURDIR)/$(CAMPAIGN_TREE) $(PY) -P
# Table 1 on the whole test grid (`tnlib evaluate RUN --split test-grid`, metrics-test-grid.json) by one code too:
# the pinned training code predates that split, so the first commit whose data holds every cell of the paper's four
# test grids evaluates every run, each once it is tested
CAMPAIGN_GRID_CODE := 1358cc06
CAMPAIGN_GRID_TREE := .campaign/$(CAMPAIGN_GRID_CODE)
CAMPAIGN_SWEEP_ARGS := --preset paper-scale --seeds 0 1 2 3 4 --accept-out-of-reach --out $(CAMPAIGN_RUNS)
CAMPAIGN := $(CAMPAIGN_PY) -m tnlib sweep $(CAMPAIGN_SWEEP_ARGS) $(if $(DEVICE),--device $(DEVICE))
# Table 2 is planned by one code too, which may be newer than the training code: planning moves no training
# rounding, and its cells only plan (a tested run is never trained on). This commit's learned GBFS computes l with
# the LM-cut each run trained with (data/paper's: Fast Downward's tie-breaking), where the training code's computed
# tnlib's; its records say so ("lmcut"), and the records of the other LM-cut are planned again.
CAMPAIGN_PLAN_CODE := dfaff7c4
CAMPAIGN_PLAN_TREE := .campaign/$(CAMPAIGN_PLAN_CODE)
CAMPAIGN_PLAN := $(CAMPAIGN_ENV) PYTHONPATH=$(CURDIR)/$(CAMPAIGN_PLAN_TREE) $(PY) -P -m tnlib sweep $(CAMPAIGN_SWEEP_ARGS)
# LANES processes side by side; DEVICE=cuda trains them on the machine's GPU (an H200 took 14 gripper runs at once,
# each at 14-17 steps a second: reports/speed-cuda/README.md, call9)
LANES ?= 2
# seconds between the lanes' starts (so that the second finds the first's runs held)
LANE_STAGGER ?= 20
DEVICE ?=
# The stages, in order: Table 2's configurations on ferry, gripper and visitall, then on blocksworld, then Table 1's
# other two everywhere (reports/paper-scale-nlm5/README.md says why this order)
TABLE2_CONFIGS := learn/ff fixed/none
TABLE1_OTHER_CONFIGS := learn/none fixed/ff
CAMPAIGN_STAGES := "--configs $(TABLE2_CONFIGS) --domains ferry gripper visitall" \
	"--configs $(TABLE2_CONFIGS) --domains blocksworld" "--configs $(TABLE1_OTHER_CONFIGS)"
# SCHEDULER=tcp://HOST:8786 trains on that Dask cluster's workers instead of local lanes: its scheduler and workers
# are asked first (`tnlib cluster-check`: the pinned code, one thread, this results folder and dataset, by their
# absolute paths, so a shared filesystem at the same path), and each stage is one sweep sent there, all three at
# once, the earlier stage's runs queued first. Start the scheduler with paper-scale-scheduler and the workers with
# paper-scale-worker, on each machine, from a checkout at this checkout's path.
SCHEDULER ?=
# Beside the training lanes, one more niced process, in passes: every tested run not yet evaluated on the whole
# test grid is (CAMPAIGN_GRID_CODE), then Table 2 is planned (CAMPAIGN_PLAN_CODE): every run of its configurations
# already trained and tested, on the first PLAN_PER_CELL instances of each plan-set cell (a run planned in part
# resumes where it stopped), domain by domain, the cheapest first (CAMPAIGN_PLAN_DOMAINS: gripper's searches at 100
# balls take the longest). The next pass starts PASS_SECONDS later while a lane trains, so that runs tested during
# a stretch of work are evaluated and planned in it (and a core a lane leaves waiting at a stage's end has work), and
# one last pass follows the lanes' end. A pass plans only when a run of Table 2's configurations was tested since the
# last planning that ended well (its test metrics as they were read before that planning began, so that a run tested
# while it ran is planned by the next pass; a run of Table 1's other two has nothing to plan): the pinned code's
# sweep loads every run's training data to find nothing to do, 8-22 s of a core a domain, 55 s a pass, which every
# ten minutes takes about a twentieth of the two cores from the lanes.
PLAN_PER_CELL ?= 2
CAMPAIGN_PLAN_DOMAINS := visitall blocksworld ferry gripper
PASS_SECONDS ?= 600
# A pass that finds the records the report reads changed (a run tested, evaluated on the grid, or planned further)
# renders the report again into the working tree, so that it shows the runs as they finish; the snapshot renders it
# once more, paused, for the commit.
CAMPAIGN_RECORDS = ls -l --time-style=+%s $(CAMPAIGN_RUNS)/*/metrics-test*.json $(CAMPAIGN_RUNS)/*/planning-*.jsonl \
	2>/dev/null | cksum
CAMPAIGN_TESTED = ls -l --time-style=+%s \
	$(foreach config,$(TABLE2_CONFIGS),$(CAMPAIGN_RUNS)/*-$(subst /,-,$(config))-*/metrics-test.json) 2>/dev/null | cksum
CAMPAIGN_RENDER = OMP_NUM_THREADS=1 $(CAMPAIGN_REPORT) >/dev/null 2>&1 || echo "the report did not render"
CAMPAIGN_PLANNING := --configs $(TABLE2_CONFIGS) --plan --plan-on plan-set --plan-per-cell $(PLAN_PER_CELL) --trained-only

.campaign/%/tnlib/__init__.py:
	rm -rf .campaign/$*.partial && mkdir -p .campaign/$*.partial
	git archive $* tnlib | tar -x -C .campaign/$*.partial
	rm -rf .campaign/$* && mv .campaign/$*.partial .campaign/$*

# A checkout that lacks the runs' weights (they live in git's history, not its tree: see paper-scale-snapshot) gets
# them back first; a tested run whose weights history never held stops it, named. The lanes say first which kind of
# machine trains them, and whether the campaign's runs met it before (another kind rounds otherwise).
paper-scale: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py $(CAMPAIGN_GRID_TREE)/tnlib/__init__.py \
		$(CAMPAIGN_PLAN_TREE)/tnlib/__init__.py
	$(if $(SCHEDULER),,@$(CAMPAIGN_ENV) $(PY) -c 'from tnlib.device import machine_kind; \
		from tnlib.experiments.running.cluster_workers import this_machine_for_results; \
		print(this_machine_for_results("$(CAMPAIGN_RUNS)", machine_kind()))')
	$(PY) -m tnlib restore-weights $(CAMPAIGN_RUNS)
	$(if $(SCHEDULER),$(PY) -m tnlib cluster-check $(SCHEDULER) --results $(CAMPAIGN_RUNS) --data $(CURDIR)/data/paper \
		--code $(CAMPAIGN_CODE))
	lanes=""; $(if $(SCHEDULER),for stage in $(CAMPAIGN_STAGES); do \
		( $(CAMPAIGN) --scheduler $(SCHEDULER) $$stage ) & \
		lanes="$$lanes $$!"; sleep $(LANE_STAGGER); \
	done,for lane in $$(seq $(LANES)); do \
		( for stage in $(CAMPAIGN_STAGES); do $(CAMPAIGN) $$stage || exit; done ) & \
		lanes="$$lanes $$!"; sleep $(LANE_STAGGER); \
	done); \
	( while :; do \
	    training=; for lane in $$lanes; do kill -0 $$lane 2>/dev/null && training=yes; done; \
	    untested=$$(for run in $(CAMPAIGN_RUNS)/*/; do [ -f $$run/metrics-test.json ] && \
		[ ! -f $$run/metrics-test-grid.json ] && echo $$run; done); \
	    [ -z "$$untested" ] || $(CAMPAIGN_ENV) PYTHONPATH=$(CURDIR)/$(CAMPAIGN_GRID_TREE) $(PY) -P -m tnlib evaluate \
		$$untested --split test-grid --device cpu; \
	    tested=$$($(CAMPAIGN_TESTED)); [ "$$tested" = "$$planned" ] || { \
		planning=done; for domain in $(CAMPAIGN_PLAN_DOMAINS); do \
		    $(CAMPAIGN_PLAN) $(CAMPAIGN_PLANNING) --domains $$domain || planning=; done; \
		[ -z "$$planning" ] || planned=$$tested; }; \
	    records=$$($(CAMPAIGN_RECORDS)); [ "$$records" = "$$rendered" ] || { $(CAMPAIGN_RENDER); rendered=$$records; }; \
	    [ -n "$$training" ] || break; sleep $(PASS_SECONDS); \
	  done ) & \
	wait

# A Dask cluster for the campaign, each process on the pinned code (python -P: not the checkout's tnlib), for
# `make paper-scale SCHEDULER=...`: its scheduler (it unpickles the sweeps' tasks, which name the pinned code's
# modules) on one machine, and on each machine WORKERS one-thread workers in the campaign's environment. Each runs
# until stopped.
SCHEDULER_PORT ?= 8786
paper-scale-scheduler: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py
	$(CAMPAIGN_PY) -m distributed.cli.dask_scheduler --port $(SCHEDULER_PORT)

WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
paper-scale-worker: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py
	@test -n "$(SCHEDULER)" || { echo "make paper-scale-worker SCHEDULER=tcp://HOST:8786 [WORKERS=N]"; exit 2; }
	$(CAMPAIGN_PY) -m distributed.cli.dask_worker $(SCHEDULER) --nworkers $(WORKERS) --nthreads 1 \
		--local-directory $(CURDIR)/.campaign/dask-worker

# Does the pinned code still make the committed curves on this machine? (Its modules by their names in that code:
# tnlib.experiments.rerun_check, from before experiments/ had wings.) Per domain, the first run whose first 300
# steps were trained on the kind RERUN_KIND (default: this machine's, as the campaign's environment names it) is
# trained again from scratch for 300 steps and its validation curve compared value for value (about a minute a
# domain; exit 1 where one differs). RERUN_KIND="AMD EPYC, AVX2" checks the runs the AVX2 machines started.
RERUN_KIND ?=
paper-scale-rerun-check: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py
	$(CAMPAIGN_PY) -c 'import sys; from pathlib import Path; \
	from tnlib.device import machine_kind; from tnlib.files import read_jsonl; \
	from tnlib.experiments.rerun_check import curve_differences; \
	runs = sorted(p for p in Path("$(CAMPAIGN_RUNS)").iterdir() if (p / "machines.jsonl").is_file()); \
	first = lambda p: read_jsonl(p / "machines.jsonl")[0]; \
	kind = "$(RERUN_KIND)" or machine_kind(); \
	ok = [p for p in runs if first(p)["step"] == 0 and first(p)["machine"] == kind \
	      and any(r["step"] >= 300 for r in read_jsonl(p / "curves.jsonl"))]; \
	chosen = {p.name.split("-")[0]: p for p in reversed(ok)}; \
	found = {d: curve_differences(p, 300) for d, p in sorted(chosen.items())}; \
	[print(chosen[d].name, "first 300 steps:", "\n  ".join(lines) or "identical") for d, lines in found.items()]; \
	print("nothing trained on", kind, "to compare") if not found else None; \
	sys.exit(1 if any(found.values()) else 0 if found else 2)'

# The last step of a stretch of work: finished runs pruned (lanes running: a run being tested finishes first), then
# the lanes and the grid evaluation paused while git takes every run's curve, metrics and checkpoint from one moment
# and the report is rendered from them (as tnlib.experiments.reporting.render_check renders it), then resumed; last,
# the READMEs' quoted intervals are checked against the findings rendered (a cell or its Holm verdict moves as runs
# land).
# Commit after it. The runs' weights (best.pt, best-nll.pt: 160 runs' would not fit the tracked tree's limit) go
# into a commit of their own, made here, and then out of the tree (.gitignore keeps them out): `tnlib
# restore-weights` brings them back from history.
# ("[t]nlib": the pattern must not match the command line of the shell that runs pkill.) Paused and resumed: the
# lanes and the planning process, and the tasks of this machine's campaign Dask workers (the processes their
# nannies started: a worker on another machine goes on writing, so on a cluster take the snapshot once the workers
# elsewhere are stopped).
CAMPAIGN_SIGNAL = pkill -$(1) -f "[t]nlib (sweep|evaluate)"; \
	for nanny in $$(pgrep -f "[d]istributed.cli.dask_worker"); do pkill -$(1) -P $$nanny; done; true
CAMPAIGN_WEIGHTS := '$(CAMPAIGN_RUNS)/*/best*.pt'

# the report's command is the committed-render check's (tnlib.experiments.reporting.render_check), so that the
# two cannot part
CAMPAIGN_REPORT = $(PY) -m $$($(PY) -c 'from tnlib.experiments.reporting.render_check import COMMITTED_RENDERS as r; \
	print(r["paper-scale-nlm5"].command("reports/paper-scale-nlm5"))')
# The standing (runs done, training, waiting; planning; hours left), as the pinned code's --dry-run prints it (the
# planning's by the current code, which reads the same records the same way and also times the searches left), how
# many tested runs have their whole test grid's metrics, and the hours to finish expected from the ended runs'
# lengths (the dry-run's are a floor: each run to the end of the chunk it is in)
CAMPAIGN_STANDING = { $(CAMPAIGN) --configs $(TABLE2_CONFIGS) $(TABLE1_OTHER_CONFIGS) --dry-run; \
	$(CAMPAIGN_ENV) $(PY) -P -m tnlib sweep $(CAMPAIGN_SWEEP_ARGS) $(CAMPAIGN_PLANNING) --dry-run; \
	echo "test grid: $$(ls $(CAMPAIGN_RUNS)/*/metrics-test-grid.json 2>/dev/null | wc -l) of the \
	$$(ls $(CAMPAIGN_RUNS)/*/metrics-test.json 2>/dev/null | wc -l) tested runs evaluated on the whole test grid"; \
	expected=$$(OMP_NUM_THREADS=1 $(PY) benchmarks/campaign_cost.py $(CAMPAIGN_RUNS) | awk '$$1 == "all" {print $$2}'); \
	echo "expected: about $${expected:-? (benchmarks/campaign_cost.py failed)} hours of one process to finish, each \
	run still to train as long as the ended runs of its domain on average (benchmarks/campaign_cost.py)"; } 2>&1
# with the report, the standing at the snapshot goes into reports/paper-scale-nlm5/standing.txt (the checkout's path
# left out)
paper-scale-snapshot: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py $(CAMPAIGN_PLAN_TREE)/tnlib/__init__.py
	timeout 600 $(PY) -m tnlib prune $(CAMPAIGN_RUNS)
	$(call CAMPAIGN_SIGNAL,STOP)
	git add -f $(CAMPAIGN_WEIGHTS) && { git diff --cached --quiet -- $(CAMPAIGN_WEIGHTS) || git commit -q -m \
		"$(CAMPAIGN_RUNS): the runs' weights at this snapshot, kept in history" -- $(CAMPAIGN_WEIGHTS); } && \
		git rm -r -q --cached --ignore-unmatch $(CAMPAIGN_WEIGHTS) && \
		git add $(CAMPAIGN_RUNS) && OMP_NUM_THREADS=1 $(CAMPAIGN_REPORT) >/dev/null && \
		$(CAMPAIGN_STANDING) | sed 's|$(CURDIR)/||g' > reports/paper-scale-nlm5/standing.txt && \
		git add reports/paper-scale-nlm5; status=$$?; $(call CAMPAIGN_SIGNAL,CONT); exit $$status
	@echo "staged: commit with  git commit -m '$(CAMPAIGN_RUNS): campaign snapshot'  (the index as staged: the \
	weights are untracked there; unstaging and adding back would track them again, and commit other work first, with \
	git commit -- PATHS)"
	@out=$$($(PY) -m pytest -q -p no:cacheprovider tests/repository/test_claims.py \
		tests/repository/test_readme_tables.py 2>&1) || { echo "and first mend the READMEs' quotes that these \
	tests fail on (a quoted cell moved, or Holm's verdict on it: the findings' family grows with every run tested; \
	a table laid out as headline.md is copied from reports/paper-scale-nlm5/headline.md):"; \
		echo "$$out" | grep '^FAILED'; }

# A lent GPU machine trains whole runs of the campaign, by the same pinned code (reports/paper-scale-nlm5/README.md,
# On a GPU): this writes what the call carries into .device-code/ (git-ignored through .git/info/exclude) -- the
# pinned tnlib with pyperplan beside it (the lent machine reaches no package index), the runs' weights (git-ignored,
# so the tree sent lacks them, and the sweep stops at a tested run without its best.pt) and LENT_PROCESSES lines of
# sweep arguments for reports/speed-cuda/lent_machine.sh -- and prints the call and what takes its runs back. The
# lanes here take learn/none and fixed/ff in the sweep's domain order, blocksworld first, so the lent machine
# starts at the other end, on runs a few minutes of the card finish (a run part-way there is lost with it).
LENT_PROCESSES ?= 15
LENT_SWEEP ?= --configs $(TABLE1_OTHER_CONFIGS) --domains gripper ferry
# the tool runs a command for at most 600 s; the script's archiving took 9 s after its deadline (call10)
LENT_SECONDS ?= 570
LENT_PART := --preset paper-scale --seeds 0 1 2 3 4 --accept-out-of-reach --out $(CAMPAIGN_RUNS) $(LENT_SWEEP) --device cuda
# beside the training, the runs an H200 trained first (call9) are trained again for 300 steps and compared with their
# committed curves (reports/speed-cuda/lent_rerun_check.py): the kind names the card and CUDA, not torch
LENT_RERUN_RUNS := $(CAMPAIGN_RUNS)/gripper-nlm-N-fixed-none-llmcut-s0 $(CAMPAIGN_RUNS)/gripper-nlm-TN-learn-ff-llmcut-s0
# and each run tested there is evaluated on the whole test grid there, on the card, by the grid code (ON_TESTED), so
# that it comes back with its metrics-test-grid.json
LENT_CALL := mkdir -p /tmp/code /tmp/grid && tar -xzf .device-code/tnlib-$(CAMPAIGN_CODE).tgz -C /tmp/code && \
	tar -xzf .device-code/tnlib-$(CAMPAIGN_GRID_CODE).tgz -C /tmp/grid && \
	tar -xzf .device-code/weights.tgz -C $(CAMPAIGN_RUNS) && export TNLIB_DATA=$$PWD/data OMP_NUM_THREADS=1 && \
	{ PYTHONPATH=/tmp/code python3 -P reports/speed-cuda/lent_rerun_check.py $(LENT_RERUN_RUNS) > $$OUT/rerun.txt 2>&1 & } && \
	TNLIB_CODE=/tmp/code TRAIN_SECONDS=$(LENT_SECONDS) OUT=$$OUT \
	ON_TESTED="env PYTHONPATH=/tmp/grid python3 -P -m tnlib evaluate --split test-grid --device cuda" \
	bash reports/speed-cuda/lent_machine.sh .device-code/parts.txt; wait; cat $$OUT/rerun.txt
paper-scale-lent: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py $(CAMPAIGN_GRID_TREE)/tnlib/__init__.py
	grep -qxF /.device-code/ .git/info/exclude 2>/dev/null || echo /.device-code/ >> .git/info/exclude
	$(PY) -m tnlib restore-weights $(CAMPAIGN_RUNS)
	rm -rf .device-code && mkdir -p .device-code
	cd $(CAMPAIGN_RUNS) && tar -czf $(CURDIR)/.device-code/weights.tgz */best*.pt
	site=$$($(PY) -c 'import os, pyperplan; print(os.path.dirname(os.path.dirname(pyperplan.__file__)))') && \
	for code in $(CAMPAIGN_CODE) $(CAMPAIGN_GRID_CODE); do tar -czf .device-code/tnlib-$$code.tgz --exclude=__pycache__ \
		-C .campaign/$$code tnlib -C "$$site" pyperplan; done
	for part in $$(seq $(LENT_PROCESSES)); do echo '$(LENT_PART)'; done > .device-code/parts.txt
	@echo 'the device call, with carry [".device-code"] and timeout_s $(shell echo $$(( $(LENT_SECONDS) + 25 > 600 ? 600 : $(LENT_SECONDS) + 25 ))):'
	@echo '  $(LENT_CALL)'
	@echo 'then, here, where rerun.txt says "identical" for both runs:'
	@echo '  $(PY) -m tnlib adopt-runs FILES_AT/runs-1.tgz.* --into $(CAMPAIGN_RUNS) --code $(CAMPAIGN_CODE)'

paper-scale-standing: $(STAMP) $(CAMPAIGN_TREE)/tnlib/__init__.py $(CAMPAIGN_PLAN_TREE)/tnlib/__init__.py
	@$(CAMPAIGN_STANDING)
