"""The reports' header (tnlib.experiments.scope): every statement computed from synthetic run folders whose answer
is known -- a still-improving curve, a missing configuration, a short budget, an easy plan set, a smaller test set."""
from __future__ import annotations

import json

from tnlib.experiments.scope import collect_scope
from tnlib.experiments.scope_page import render_scope, scope_header

from fixtures.run_folders import FALLING, FLAT, results, write_data_root, write_metrics, write_planning, write_run


def test_collect_scope_reads_what_was_done(results):
    scope = collect_scope(results)
    assert len(scope.runs) == 4
    improving = {r.name.split("-", 1)[1]: r.improving for r in scope.runs}
    assert improving == {"nlm-N-learn-ff-llmcut-s0": True, "nlm-TN-learn-ff-llmcut-s0": False,
                         "nlm-TN-fixed-none-llmcut-s0": True, "nlm-TN-learn-ff-llmcut-s1": None}
    assert sorted(scope.samples()) == [300 * 64, 400 * 64, 400 * 64, 400 * 64]
    assert scope.unfinished() == ["blocksworld-nlm-TN-fixed-none-llmcut-s0"]
    assert scope.missing("config") == ["learn/none", "fixed/ff"]
    assert scope.missing("model") == ["hgn", "linear"] and scope.missing("distribution") == []
    assert scope.missing("domain") == ["ferry", "visitall"]
    blocks = scope.domains["blocksworld"]
    assert (blocks.train_instances, blocks.train_used) == (200, [200])
    assert (blocks.test_instances, blocks.test_states, blocks.test_sizes) == (50, 700, "blocks 9-10")
    assert (blocks.paper_test_instances, blocks.paper_test_sizes) == (12 * 11, "blocks 11-22")  # the paper profile
    assert (blocks.planned, blocks.ff_solved, blocks.plan_split_size, blocks.protocols) == (4, 3, 24, ["paper"])
    gripper = scope.domains["gripper"]
    assert (gripper.test_sizes, gripper.paper_test_sizes) == ("balls 8-10", "balls {20,40,60,80,100}")
    assert (gripper.planned, gripper.ff_solved) == (2, 2)


def test_header_states_budget_gaps_sets_and_curves(results):
    header = scope_header(results)
    assert header.startswith("## What these results can and cannot show")
    assert "4 run folders in `results/`" in header
    assert "| training per run | 300-400 steps x batch 64 = 19,200-25,600 samples (0.19%-0.25%); 1 run stopped " \
           "before its configured steps | 40,000 steps x batch 256 = 10,240,000 samples |" in header
    assert "| seeds | 2 (0, 1); 0-1 per cell" not in header  # (per-cell counts only when they differ)
    assert "| configurations (sigma/residual) | learn/ff, fixed/none (missing: learn/none, fixed/ff) |" in header
    assert "| models | nlm (missing: hgn, linear) |" in header
    assert ("| blocksworld | 200 (all) | 50 instances, 700 states; blocks 9-10 | 132 instances; blocks 11-22 | "
            "3/4 (0.75); 4 of the split's 24 planned | 0.13 of 100 |") in header
    assert "GBFS: at most 10,000 evaluations, counted by `paper`: the paper's counting" in header
    assert "(the paper: 10,000)" not in header
    assert "**2 of 3 runs** (1 with fewer than 4 evaluations cannot tell)" in header
    assert "| nlm | learn/ff | 1 of 1 still improving | 0 of 1 still improving (1 too short) |" in header
    assert "| nlm | fixed/none |  | 1 of 1 still improving |" in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "saw 0.25% of the paper's training samples or less" in caveats
    assert "2 of 3 runs were still improving" in caveats
    assert "Trained a fixed number of steps, short of flat" in caveats and "reports/converged/" in caveats
    assert "configurations learn/none, fixed/ff; models hgn, linear; domains ferry, visitall" in caveats
    assert "2 seeds (the paper: 5): the ± are rough." in caveats
    assert "h_FF alone solves every planned instance of gripper:" in caveats  # not blocksworld: 3 of 4
    assert "Test sets differ from the paper's in blocksworld, gripper" in caveats
    assert "Plan sets of 2/4 instances (blocksworld, gripper; the paper: 100)" in caveats


def test_header_of_the_papers_setting_has_no_caveats_about_it(tmp_path):
    data, results = tmp_path / "data", tmp_path / "results"
    paper_params = [{"blocks": b} for b in range(11, 23)]
    write_data_root(data, train=456, test=132, test_states=2000, test_params=paper_params, plan=100)
    results.mkdir()
    for config in (("learn", "ff"), ("learn", "none"), ("fixed", "ff"), ("fixed", "none")):
        for distribution in ("N", "TN"):
            for seed in range(5):
                write_run(results, data, FLAT, sigma=config[0], residual=config[1], distribution=distribution,
                          seed=seed, steps=400, batch_size=25_600, instances=400)  # 400 x 25,600 = 40,000 x 256
    write_planning(results / "baseline-blocksworld-ff.jsonl", [True] * 13 + [False] * 87)
    scope = collect_scope(results)
    assert scope.domains["blocksworld"].train_used == [400]
    header = render_scope(scope)
    assert "(100%)" in header and "**0 of 40 runs**" in header and "400 (of 456)" in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "training samples" not in caveats and "still improving" not in caveats and "seed" not in caveats
    assert "Test sets" not in caveats and "h_FF alone" not in caveats and "Plan sets" not in caveats
    assert "Not run here: models hgn, linear; domains ferry, gripper, visitall." in caveats


def test_header_flags_mixed_protocols_and_sigma_links(results, tmp_path):
    write_run(results, tmp_path / "data", FLAT, seed=2, sigma_link="bounded")
    run = write_run(results, tmp_path / "data", FLAT, seed=3)
    write_planning(run / "planning-default.jsonl", [True], protocol="distinct")
    header = scope_header(results)
    assert "`distinct`: distinct-state counting" in header and "**mixed protocols" in header
    assert "| learned sigma | 10 sigmoid(x) + 0.1, softplus(x) + 0.01 |" in header
    assert "different learned-sigma links (bounded, softplus) are averaged together" in header


def test_header_says_whose_lmcut_the_planning_records_computed(results, tmp_path):
    assert "l at planning" not in scope_header(results)  # records that name none: nothing to say
    runs = [write_run(results, tmp_path / "data", FLAT, seed=seed) for seed in (2, 3, 4)]
    for run, lmcut in zip(runs, ("fast-downward", "fast-downward", None)):
        path = run / "planning-default.jsonl"
        write_planning(path, [True, False, True])
        path.write_text("".join(json.dumps({**json.loads(line), "lmcut": lmcut}) + "\n"
                                for line in path.read_text().splitlines()))
    header = scope_header(results)
    assert ("l at planning (TN's truncated mean and N+clip's max(mu, l) read it): the LM-cut each run trained with, "
            "computed state by state -- Fast Downward's tie-breaking in 6 planning records, tnlib's in 0; 3 read "
            "none (N's mu, which reads l only where it is infinite)") in header


def test_header_without_runs_or_data(tmp_path):
    assert "No run folders" in scope_header(tmp_path)
    run = write_run(tmp_path / "r", tmp_path / "no-data", [])
    header = scope_header(tmp_path / "r")
    assert "0 steps x batch 64 = 0 samples" in header and "| blocksworld | ? | ? |" in header
    assert "**0 of 0 runs** (1 with fewer than 4 evaluations cannot tell)" in header
    assert "1 seed (the paper: 5): the tables show no spread across seeds." in header
    assert run.is_dir()


def test_header_compares_a_smaller_evaluation_limit_with_the_papers(results):
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 200}))
    header = scope_header(results)
    assert "GBFS: at most 200 evaluations (the paper: 10,000), counted by `paper`" in header


def test_header_names_the_authors_seeds_fixed_sigma_and_plan_grid(results):
    header = scope_header(results)
    # the paper names no seeds; 0-4 are tnlib's, 42-400 the authors' scripts'
    assert "| seeds | 2 (0, 1) | 5, not named (the authors' scripts: 42, 100, 200, 300, 400) |" in header
    assert "5 (0, 1, 2, 3, 4)" not in header
    # a fixed/none run is here: the header states both fixed sigmas
    assert ("| fixed sigma | 1/sqrt(2) = 0.707 | 1/sqrt(2) = 0.707 in the text (the authors' code: "
            "sqrt(2) = 1.414) |") in header
    # the authors' Table 2 instances, beside the appendix's test grid (blocksworld and gripper are in `results`)
    assert "- blocksworld: blocks 11-22; seeds 1-11 -- the same as the appendix's" in header
    assert ("- gripper: balls {20,30,40,50,60}; seeds 1-20 -- the appendix's: balls {20,40,60,80,100}; "
            "seeds 1-20") in header
    assert "- ferry:" not in header  # not run here


def test_authors_plan_grid_differs_from_the_appendix_where_their_scripts_do():
    from tnlib.experiments.scope import authors_plan_grid

    assert authors_plan_grid("ferry") == (
        "locations {10,15,20,25,30}, cars {10,15,20,25,30}; seeds 1-4",
        "locations {10,15,20,25,30}, cars {10,15,20,25,30}; seeds 1-16")
    assert authors_plan_grid("visitall") == ("x 6-8, y 6-8, ratio {0.5,1} (x = y); seeds 1-17",
                                             "x 5-7, y 5-7, ratio {0.5,1}; seeds 1-17")
    assert authors_plan_grid("elevators") is None


def test_header_names_the_authors_fixed_sigma_where_runs_used_it(tmp_path):
    run = write_run(tmp_path / "r", tmp_path / "data", FLAT, sigma="fixed", residual="none", fixed_sigma="authors")
    assert run.name == "blocksworld-nlm-TN-fixed-authors-none-llmcut-s0"  # beside the paper's fixed/none, not on it
    assert ("| fixed sigma | sqrt(2) = 1.414 (the authors' code's) | 1/sqrt(2) = 0.707 in the text (the authors' "
            "code: sqrt(2) = 1.414) |") in scope_header(run.parent)


def test_learn_only_runs_state_no_fixed_sigma(tmp_path):
    run = write_run(tmp_path / "r", tmp_path / "data", FLAT)
    assert "| fixed sigma |" not in scope_header(run.parent)


def test_header_of_runs_trained_until_flat_says_how_far_each_went(tmp_path):
    """A sweep with max_steps: the header says the runs trained until flat, how many went on and how many reached
    the cap, and gives each cell's range of steps; runs still improving are the ones that hit the cap."""
    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    results.mkdir()
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200, "max_steps": 800}))
    write_run(results, data, FLAT, distribution="N", steps=200, eval_every=25)  # flat at once: 200 steps
    write_run(results, data, FLAT + [3.9] * 4, distribution="N", seed=1, steps=600, eval_every=50)  # went on
    write_run(results, data, FALLING, distribution="TN", steps=800, eval_every=100)  # reached the cap improving
    scope = collect_scope(results)
    assert scope.until_flat == (200, 800)
    assert scope.steps_trained() == {("nlm", "learn/ff", "N"): [200, 600], ("nlm", "learn/ff", "TN"): [800]}
    header = render_scope(scope)
    assert ("| training per run | 200-800 steps x batch 64 = 12,800-51,200 samples (0.12%-0.5%); trained until flat "
            "(beyond the paper): 200 steps, then on while still improving, up to 800 -- 2 of 3 runs went on, "
            "1 reached 800 |") in header
    assert ("| nlm | learn/ff | 0 of 2 still improving, 200-600 (median 400) steps | "
            "1 of 1 still improving, 800 steps |") in header
    assert "1 of 3 runs were still improving when training stopped at max_steps (800)" in header
    assert "short of flat" not in header  # they went on while improving: nothing left to the converged presets
    # a sweep of a fixed number of steps says none of it
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "steps": 200}))
    plain = render_scope(collect_scope(results))
    assert collect_scope(results).until_flat is None
    assert "until flat" not in plain and "at max_steps" not in plain
    assert "| nlm | learn/ff | 0 of 2 still improving, 200-600 (median 400) steps |" in plain  # steps differ


def test_header_leaves_out_runs_still_training_beside_evaluated_ones(tmp_path):
    """A folder a sweep is still filling: the header describes the runs the tables read (those with test metrics)
    and names the others; a folder where no run has test metrics yet is described whole."""
    data, results = tmp_path / "data", tmp_path / "results"
    write_data_root(data)
    write_data_root(data, "gripper", train=120, test=51, test_states=692, test_params=[{"balls": 8}])
    results.mkdir()
    (results / "sweep.json").write_text(json.dumps({"max_evaluations": 10_000, "data_root": None}))
    done = write_run(results, data, FLAT, distribution="N", steps=200, eval_every=25)
    training = write_run(results, data, FALLING[:3], domain="gripper", distribution="TN", steps=800,
                         eval_every=100)
    write_planning(results / "baseline-gripper-ff.jsonl", [True, False])
    whole = collect_scope(results)
    assert sorted(r.name for r in whole.runs) == sorted([done.name, training.name]) and not whole.without_metrics
    write_metrics(done, mse=1.0, nll=1.0)
    scope = collect_scope(results)
    assert [r.name for r in scope.runs] == [done.name] and scope.without_metrics == [training.name]
    # gripper, planned by its baseline but with no run tabled yet, reads the data the folder's runs trained on
    assert (scope.domains["gripper"].train_instances, scope.domains["gripper"].test_states) == (120, 692)
    header = render_scope(scope)
    assert "Computed from the 1 run folder in" in header
    assert f"Left out: 1 run folder without test metrics yet (still training, or stopped before the test " \
           f"evaluation): {training.name}." in header
    assert "| training per run | 200 steps x batch 64" in header  # not the 300 steps of the run still training


def test_header_names_the_hardware_that_trained_the_runs_and_flags_a_run_resumed_on_another(results):
    assert "| trained on |" not in scope_header(results)  # no run folder records it: the header it always had
    runs = sorted(path for path in results.iterdir() if (path / "config.json").is_file())

    def record(run, *starts):
        (run / "machines.jsonl").write_text("".join(json.dumps({"step": step, "machine": machine}) + "\n"
                                                    for step, machine in starts))

    for run in runs[:2]:
        record(run, (0, "CPU A, AVX512"))
    header = scope_header(results)
    assert "| trained on | CPU A, AVX512: 2 runs; not recorded: 2 runs | one NVIDIA Tesla V100 |" in header
    assert "more than one kind of hardware" not in header
    record(runs[2], (0, "CPU A, AVX512"), (200, "GPU B, CUDA 12.8"))
    record(runs[3], (100, "CPU A, AVX512"))  # its first 100 steps were trained before run folders said where
    header = scope_header(results)
    assert (f"| trained on | CPU A, AVX512: 2 runs; CPU A, AVX512, then GPU B, CUDA 12.8: 1 run ({runs[2].name}); "
            f"not recorded, then CPU A, AVX512: 1 run ({runs[3].name}) | one NVIDIA Tesla V100 |") in header
    caveats = header.split("**Read the tables with this in mind:**")[1]
    assert "Trained on more than one kind of hardware (above)" in caveats


def test_header_names_the_code_that_trained_the_runs_where_their_starts_record_it(results):
    runs = sorted(path for path in results.iterdir() if (path / "config.json").is_file())
    assert len(runs) == 4

    def record(run, *starts):
        (run / "machines.jsonl").write_text("".join(
            json.dumps({"step": step, "machine": "CPU A, AVX2", **({"code": code} if code else {})}) + "\n"
            for step, code in starts))

    for run in runs:
        record(run, (0, None))
    assert "| code that trained" not in scope_header(results)  # no start records it: the header it always had
    record(runs[0], (0, "abc1234"))
    record(runs[1], (0, "abc1234"), (300, "def5678"))
    record(runs[2], (0, None), (100, "abc1234"))  # its first stretch trained before starts recorded the code
    assert (f"| code that trained (tnlib commit) | abc1234: 1 run; abc1234, then def5678: 1 run ({runs[1].name}); "
            f"not recorded, then abc1234: 1 run ({runs[2].name}); not recorded: 1 run | "
            "the authors' (IBM/pddlsl) |") in scope_header(results)


def test_runs_that_trained_on_a_whole_split_before_it_grew_say_so(results):
    blocksworld = sorted(path for path in results.iterdir() if path.name.startswith("blocksworld"))
    for run in blocksworld:  # each asked for the whole split (instances null) when it held 150 of today's 200
        (run / "data.json").write_text(json.dumps({"train_instances_requested": None, "train_instances": 150}))
    scope = collect_scope(results)
    assert (scope.domains["blocksworld"].train_used, scope.domains["blocksworld"].train_then) == ([150], [150])
    assert "| blocksworld | 150 (all the split then held; 200 now) |" in render_scope(scope)
