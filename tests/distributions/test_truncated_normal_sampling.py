"""TruncatedNormal.sample: the rejection samplers' acceptance rates, their choice per element, and the law of the
draws (Kolmogorov-Smirnov against the distribution's own cdf, which the mpmath tests check), by the compiled CPU
kernels (tnlib.distributions._sample_kernels) and by the torch route other devices take."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
import torch

from tnlib import TruncatedNormal
from tnlib.distributions import _sample_kernels, _sample_proposals, _sampling, truncated_normal
from tnlib.distributions._sampling import _EXPONENTIAL, _NORMAL, _UNIFORM, _acceptance_rates, _propose, _proposals
from tnlib.files import REPO_ROOT

INF = math.inf
NAN = math.nan
ROUTES = ["kernels", "torch"]

# (loc, scale, low, high) and the proposal each should draw from
CASES = [
    ((0.0, 1.0, -1.0, 2.0), _NORMAL),  # straddling, most of the mass inside
    ((0.0, 1.0, -INF, INF), _NORMAL),
    ((0.0, 1.0, 0.0, INF), _NORMAL),  # the half-normal: folded, every draw kept
    ((-0.3, 1.0, 0.0, 1.5), _EXPONENTIAL),  # the slope at the bound beats the fold by a little
    ((50.0, 2.0, -INF, 0.0), _EXPONENTIAL),  # mirrored far tail
    ((0.0, 1.0, 3.0, 5.0), _EXPONENTIAL),
    ((-1e5, 1.0, 0.0, INF), _EXPONENTIAL),
    ((0.0, 1.0, 0.2, 1.7), _NORMAL),
    ((0.0, 1.0, -1e-3, 1e-3), _UNIFORM),  # narrow, around loc
    ((0.0, 1.0, 5.0, 5.001), _UNIFORM),  # narrow, in the tail: nearly flat, where the exponential keeps a little more
    ((0.0, 1.0, 5.0, 5.1), _EXPONENTIAL),  # short, in the tail: the density falls by e^-0.5 across it
    ((0.0, 1.0, -0.5, 0.5), _UNIFORM),
    ((0.1, 1.0, 0.0, 0.3), _UNIFORM),
]


def _distribution(params, dtype=torch.float64, shape=()):
    return TruncatedNormal(*(torch.full(shape, p, dtype=dtype) for p in params))


def _kind(d: TruncatedNormal) -> int:
    (kind, _, _), = _proposals(d._core)
    return kind


def _take_route(monkeypatch, route: str) -> None:
    """Makes ``sample`` take the CPU kernels (as a CPU call does) or the torch route (as other devices do)."""
    if route == "torch":
        monkeypatch.setattr(truncated_normal, "_kernels_serve", lambda tensor: False)


def _equal(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether x and y hold the same values, NaN where the other has NaN."""
    return torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num())


def _ks_pvalue(d: TruncatedNormal, x: torch.Tensor) -> float:
    cdf = lambda v: d.cdf(torch.as_tensor(v, dtype=x.dtype)).double().numpy()  # noqa: E731
    return scipy.stats.kstest(x.double().numpy(), cdf).pvalue


@pytest.mark.parametrize("params, kind", CASES)
def test_each_regime_takes_the_proposal_with_the_highest_acceptance_or_the_uniform_where_nearly_flat(params, kind):
    assert _kind(_distribution(params)) == kind


@pytest.mark.parametrize("params, _", CASES)
def test_acceptance_rates_match_the_proposals_own_acceptance(params, _):
    # each applicable proposal, drawn 200,000 times, keeps the share its rate says (3 standard errors and 2e-3)
    core = _distribution(params, shape=(1,))._core
    rates = _acceptance_rates(core)[:, 0]
    torch.manual_seed(0)
    n = 200_000
    for kind in (_NORMAL, _EXPONENTIAL, _UNIFORM):
        rate = rates[kind].item()
        if rate == 0.0:
            continue
        _, keep = _propose(kind, core, torch.zeros(n, dtype=torch.long))
        error = 3 * math.sqrt(rate * (1 - rate) / n) + 2e-3
        assert keep.double().mean().item() == pytest.approx(rate, abs=error), kind


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("params, _", CASES)
def test_samples_follow_the_distribution(monkeypatch, params, _, dtype, route):
    _take_route(monkeypatch, route)
    d = _distribution(params, dtype)
    torch.manual_seed(0)
    x = d.sample((20_000,))
    assert x.dtype == dtype and x.shape == (20_000,)
    assert ((x >= params[2]) & (x <= params[3])).all()
    assert _ks_pvalue(d, x) > 1e-3  # a fixed seed: not failed by chance


@pytest.mark.parametrize("route", ROUTES)
def test_a_batch_of_regimes_draws_each_element_from_its_own_law(monkeypatch, route):
    _take_route(monkeypatch, route)
    params = torch.tensor([p for p, _ in CASES], dtype=torch.float64)
    d = TruncatedNormal(*params.T)
    assert {kind for kind, _, _ in _proposals(d._core)} == {_NORMAL, _EXPONENTIAL, _UNIFORM}
    torch.manual_seed(1)
    x = d.sample((5000,))
    assert x.shape == (5000, len(CASES))
    for j, (p, _) in enumerate(CASES):
        assert _ks_pvalue(_distribution(p), x[:, j]) > 1e-3, p


@pytest.mark.parametrize("route", ROUTES)
def test_the_same_seed_draws_the_same_samples(monkeypatch, route):
    _take_route(monkeypatch, route)
    d = _distribution((0.0, 1.0, 0.2, 1.7), shape=(3, 4))
    torch.manual_seed(5)
    first = d.sample((7,))
    torch.manual_seed(5)
    assert torch.equal(first, d.sample((7,)))
    assert first.shape == (7, 3, 4)


def test_elements_no_proposal_suits_are_drawn_by_inversion(monkeypatch):
    # (the torch route's fallback; the kernels never need it, as every element's best rate is at least 0.05)
    _take_route(monkeypatch, "torch")
    monkeypatch.setattr(_sampling, "_MIN_ACCEPTANCE", 2.0)  # no rate reaches it
    params = (0.0, 1.0, 0.2, 1.7)
    d = _distribution(params)
    assert _kind(d) == -1
    torch.manual_seed(0)
    x = d.sample((20_000,))
    assert ((x >= 0.2) & (x <= 1.7)).all()
    assert _ks_pvalue(d, x) > 1e-3
    torch.manual_seed(0)
    # inversion draws exactly rsample's values: the same uniforms through the icdf
    assert torch.equal(x, d.rsample((20_000,)))


def _regime_grid() -> TruncatedNormal:
    """Standard normals truncated to bounds from -1e4 to 1e4 scales from loc and widths from 1e-6 scales to
    infinite, both sides of loc, and about the edges of the regimes (a = 0.25, narrow intervals)."""
    starts = [-1e4, -100, -30, -10, -5, -3, -2, -1.5, -1, -0.7, -0.5, -0.3, -0.1, -0.01, 0, 0.01, 0.1, 0.2, 0.25,
              0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10, 30, 100, 1e4]
    widths = [1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9, 1, 1.1, 1.5, 2, 2.5, 3, 5, 10, 100, INF]
    low = torch.tensor([s for s in starts for _ in widths], dtype=torch.float64)
    high = low + torch.tensor(widths * len(starts), dtype=torch.float64)
    return TruncatedNormal(torch.zeros_like(low), torch.ones_like(low), low, high)


def test_some_proposal_accepts_nearly_half_the_candidates_in_every_regime():
    # the least, 0.4946, is an interval from just below loc 2.55 scales wide (neither the fold nor the uniform fit)
    assert float(_acceptance_rates(_regime_grid()._core).max(0).values.min()) >= 0.49


def test_the_kernels_choose_the_proposal_the_torch_route_chooses():
    # the kernels compare the rates divided by the mass they share; the torch route, the rates themselves; both take
    # the uniform where the interval, at or above loc, is nearly flat
    d = _regime_grid()
    core = d._core
    rates = _acceptance_rates(core)
    expected = torch.empty(core.a.numel(), dtype=torch.long)
    for kind, elements, _ in _proposals(core):
        expected[elements] = kind
    chosen = torch.tensor([_sample_proposals._kind_element(float(a), float(w)) for a, w in zip(core.a, core.w)])
    top_two = rates.topk(2, dim=0).values
    nearly_flat = (core.a >= 0) & ((core.a + 0.5 * core.w) * core.w <= _sampling._NEARLY_FLAT)
    clear = (top_two[0] > top_two[1] * (1 + 1e-12)) | nearly_flat  # (a tie may go either way by rounding)
    assert int(clear.sum()) > 0.9 * clear.numel()
    assert torch.equal(chosen[clear], expected[clear])
    assert set(chosen.tolist()) == {_NORMAL, _EXPONENTIAL, _UNIFORM}
    # where nearly flat the uniform is taken over a better exponential, and keeps at least exp(-1/16) of its
    # candidates
    assert bool((nearly_flat & (rates.max(0).indices == _EXPONENTIAL)).any())
    assert bool((rates[_UNIFORM][nearly_flat] >= math.exp(-_sampling._NEARLY_FLAT)).all())
    assert bool((chosen[nearly_flat] == _UNIFORM).all())


@pytest.mark.parametrize("params", [(0.0, 1.0, -1.0, 2.0), (-1e5, 1.0, 0.0, INF), (0.0, 1.0, -1e-3, 1e-3),
                                    (50.0, 2.0, -INF, 0.0), "mixed", "mostly across loc"])
def test_the_kernels_draw_the_same_values_however_the_threads_and_blocks_split_them(params):
    # each draw's uniforms are a function of the key, the draw's index and its attempt only; a block whose draws
    # all take one proposal runs a loop of its own ("mixed": every proposal, a point and NaN, so that blocks of one
    # draw take those loops and larger ones the loop of every proposal; "mostly across loc": one element in 97 a
    # tail's, so that a block that starts across loc begins the loop across loc and takes the others' loops)
    if params == "mixed":
        rows = [p for p, _ in CASES] + [(0.0, 1.0, 1.0, 1.0), (NAN, 1.0, 0.0, INF)]
        d = TruncatedNormal(*torch.tensor(rows * 215, dtype=torch.float64)[:3000].T, validate_args=False)
    elif params == "mostly across loc":
        rows = [(0.0, 1.0, -1.0, 2.0)] * 40 + [(0.0, 1.0, 3.0, 5.0)] + [(0.5, 2.0, -1.0, INF)] * 56
        d = TruncatedNormal(*torch.tensor(rows * 31, dtype=torch.float64)[:3000].T, validate_args=False)
    else:
        d = _distribution(params, shape=(3000,))

    def draws(shape, key=12345, parallel=False, block_size=_sample_kernels._BLOCK):
        return _sample_kernels.sample_with_key(d.loc, d.scale, d.low, d.high, torch.Size(shape), key, parallel,
                                               block_size)

    three = draws((3, 3000))
    for parallel, block_size in [(True, _sample_kernels._BLOCK), (False, 1), (False, 7), (True, 100), (False, 9000)]:
        assert _equal(three, draws((3, 3000), parallel=parallel, block_size=block_size)), (parallel, block_size)
    # a batch drawn once per element forms its states block by block, with the values of the first draws above
    for parallel, block_size in [(False, _sample_kernels._BLOCK), (True, 100), (False, 1), (False, 5000)]:
        assert _equal(three[0], draws((3000,), parallel=parallel, block_size=block_size)), (parallel, block_size)
    assert not _equal(three, draws((3, 3000), key=12346))


_DRAW_IN_A_FRESH_PROCESS = """
import json, sys
import torch
from tnlib import TruncatedNormal
params = torch.tensor(json.loads(sys.argv[1]), dtype=torch.float64)
torch.manual_seed(11)
x = TruncatedNormal(*params.T, validate_args=False).sample((int(sys.argv[2]),))
print(json.dumps(x.flatten().tolist()))
"""


@pytest.mark.parametrize("count", [1, 4])
def test_the_same_seed_draws_the_same_samples_in_another_process(count):
    # the kernels' draws are a function of torch's seed and the parameters, not of anything a process holds
    params = [list(p) for p, _ in CASES] + [[0.0, 1.0, 1.0, 1.0], [NAN, 1.0, 0.0, INF]]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", _DRAW_IN_A_FRESH_PROCESS, json.dumps(params), str(count)],
                         capture_output=True, text=True, check=True, env=env)
    there = torch.tensor(json.loads(out.stdout), dtype=torch.float64)
    torch.manual_seed(11)
    here = TruncatedNormal(*torch.tensor(params, dtype=torch.float64).T, validate_args=False).sample((count,))
    assert bool(there.isnan().any()) and _equal(there, here.flatten())


def test_the_kernels_draw_float32_as_the_float64_draws_rounded():
    params = [(0.0, 1.0, -1.0, 2.0), (-7.0, 1.0, 0.0, INF), (0.0, 1.0, 0.25, 0.5), (3.0, 0.5, -INF, 1.0)]
    columns = [torch.tensor(column, dtype=torch.float64) for column in zip(*params)]
    wide = _sample_kernels.sample_with_key(*columns, torch.Size((500, len(params))), 7)
    narrow = _sample_kernels.sample_with_key(*(c.float() for c in columns), torch.Size((500, len(params))), 7)
    assert narrow.dtype == torch.float32 and torch.equal(narrow, wide.float())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("params", [(-1e5, 1.0, 0.0, INF), (-30.0, 2.0, 0.0, INF), (0.0, 1.0, 1e-3, 1.001e-3),
                                    (-3.0, 1.0, 0.0, 0.1), (0.0, 1.0, -2.0, 3.0), (1.0, 0.5, 0.0, INF),
                                    (-12.0, 1.0, 0.0, 0.5), (20.0, 1.0, -1.0, 0.0), (0.0, 1.0, -0.5, 1e-4),
                                    (0.0, 1.0, -0.2, 0.3), (0.0, 1.0, -3.0, 0.3)])
def test_kernel_draws_follow_the_law_of_each_regime_in_one_batch(dtype, params):
    # one-sided far tails, narrow, moderate, two-sided far (both sides), a narrow interval across loc, and across loc
    # where most draws come from the uniform after the Normal's pair missed ([-0.2, 0.3]) or the Normal's alone
    # ([-3, 0.3]): a batch of 20,000 distinct elements of one law, one draw each
    d = _distribution(params, dtype, shape=(20_000,))
    torch.manual_seed(3)
    x = d.sample()
    assert x.dtype == dtype and ((x >= d.low) & (x <= d.high)).all()
    # against the law of the parameters as given (float32: rounded), in float64
    assert _ks_pvalue(_distribution([float(torch.tensor(p, dtype=dtype)) for p in params]), x) > 1e-3


@pytest.mark.parametrize("low, high", [(-0.2, 0.3), (-1.0, 1.2), (-3.0, 0.3), (-2.5, 2.5), (-0.1, INF)])
def test_an_attempt_across_loc_is_rejected_only_where_both_its_proposals_are(low, high):
    # an interval across loc takes the Normal's pair, then the uniform: an attempt is rejected where neither of the
    # pair falls in [low, high] (each with probability 1 - Z) and the uniform's test rejects (1 - Z sqrt(2 pi) / w;
    # never accepted on an infinite interval)
    count = 40_000
    loc, scale, lows, highs = (np.full(count, x) for x in (0.0, 1.0, low, high))
    codes, out = np.zeros(count, dtype=np.uint8), np.empty(count)
    pending, scratch = _sample_kernels._new_scratch(count)
    assert _sample_kernels._straddling_in_order(loc, scale, lows, highs, codes, 0, 0, count, np.uint64(99), out,
                                                pending, scratch)
    rejected = float(((codes >> _sample_kernels._FLAG_SHIFT) == _sample_proposals._REJECTED).mean())
    assert pending[3][_sample_proposals._STRADDLING] == round(rejected * count)
    mass = scipy.stats.norm.cdf(high) - scipy.stats.norm.cdf(low)
    uniform_keeps = mass * math.sqrt(2 * math.pi) / (high - low)
    expected = (1 - mass) ** 2 * (1 - uniform_keeps)
    assert abs(rejected - expected) <= 5 * math.sqrt(expected * (1 - expected) / count) + 1e-4, (rejected, expected)
    accepted = (codes >> _sample_kernels._FLAG_SHIFT) == _sample_proposals._ACCEPTED
    assert bool(((out[accepted] >= low) & (out[accepted] <= high)).all())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_block_across_loc_forms_in_two_loops_the_candidates_of_each_attempt_alone(dtype):
    # the block's loop forms every draw's pair, a second loop the uniform of the draws whose pair missed: each draw's
    # candidate and flag are those of its attempt formed alone (_candidate), at its own counters
    count, first, at = 3000, 5000, 7
    rng = np.random.default_rng(8)
    loc = rng.uniform(-1.0, 1.0, count + at)
    scale = rng.uniform(0.5, 2.0, count + at)
    low = loc - scale * rng.uniform(0.15, 3.0, count + at)
    high = loc + scale * np.where(rng.uniform(size=count + at) < 0.3, INF, rng.uniform(0.15, 3.0, count + at))
    loc, scale, low, high = (x.astype(dtype) for x in (loc, scale, low, high))
    codes, out = np.zeros(count, dtype=np.uint8), np.zeros(first + count, dtype=dtype)
    pending, scratch = _sample_kernels._new_scratch(count)
    key = np.uint64(31)
    assert _sample_kernels._straddling_in_order(loc, scale, low, high, codes, first, at, count, key, out, pending,
                                                scratch)
    params = [(float(loc[i]), float(scale[i]), float(low[i]), float(high[i])) for i in range(at, at + count)]
    alone = [_sample_proposals._candidate(_sample_proposals._STRADDLING, *params[j], key, np.uint64((first + j) << 24))
             for j in range(count)]
    assert np.array_equal(out[first:], np.array([x for x, _ in alone], dtype=dtype))
    expected = [flag if flag != _sample_proposals._UNDECIDED else
                _sample_kernels._decide(_sample_proposals._STRADDLING, *params[j], key, first + j, 0)
                for j, (_, flag) in enumerate(alone)]
    flags = codes >> _sample_kernels._FLAG_SHIFT
    assert np.array_equal(flags, np.array(expected))
    assert np.array_equal(codes & _sample_kernels._CODE_BITS, np.full(count, _sample_proposals._STRADDLING))
    # the rejected draws wait, with their elements, to be drawn again
    rejected = np.flatnonzero(flags == _sample_proposals._REJECTED)
    listed = pending[3][_sample_proposals._STRADDLING]
    assert np.array_equal(pending[0][_sample_proposals._STRADDLING][:listed], first + rejected)
    assert np.array_equal(pending[1][_sample_proposals._STRADDLING][:listed], at + rejected)
    # the second loop decided some draws each way (the uniform kept and rejected, never kept on an infinite interval)
    missed = np.array([not _sample_proposals._straddling_pair(
        float(loc[at + j]), float(scale[at + j]), float(low[at + j]), float(high[at + j]),
        _sample_proposals._uniform(key, np.uint64((first + j) << 24)),
        _sample_proposals._uniform(key, np.uint64(((first + j) << 24) + 1)))[1] for j in range(count)])
    assert 50 < int((missed & (flags == _sample_proposals._ACCEPTED)).sum()) < int(missed.sum())
    assert bool((flags[missed & np.isinf(high[at:])] == _sample_proposals._REJECTED).all())
    assert int((missed & np.isinf(high[at:])).sum()) > 10
    # with an element that is not across loc among them (a point), the block is left to the codes: nothing listed
    high[at + count // 2] = low[at + count // 2]
    pending[3][:] = 0
    assert not _sample_kernels._straddling_in_order(loc, scale, low, high, codes, first, at, count, key, out,
                                                    pending, scratch)
    assert int(pending[3].sum()) == 0


def test_an_attempt_across_loc_leaves_to_the_exp_a_uniform_within_its_short_exps_error():
    # on [-1, 1]: u = 0.9 and v = 1/8 put both of the Normal's pair at 1.52 scales, outside; the uniform's candidate
    # (u_next = 3/4) is 0.5, kept where v_next <= exp(-1/8); v_next within 1e-8 of it is left undecided by the short
    # exp and decided by the exp
    kept_below = math.exp(-0.125)
    flags = []
    for v_next in (kept_below * (1 - 1e-8), kept_below, kept_below * (1 + 1e-8), 0.5, 0.95):
        arguments = (0.0, 1.0, -1.0, 1.0, 0.9, 0.125, 0.75, v_next)
        x, short = _sample_proposals._straddling_candidate(*arguments, False)
        _, exact = _sample_proposals._straddling_candidate(*arguments, True)
        assert x == 0.5
        flags.append((short, exact))
    proposals = _sample_proposals
    accepted, rejected, undecided = proposals._ACCEPTED, proposals._REJECTED, proposals._UNDECIDED
    assert flags == [(undecided, accepted), (undecided, accepted), (undecided, rejected), (accepted, accepted),
                     (rejected, rejected)]
    # the exp's decision reads the attempt's own four uniforms, at draw * 2^24 + 4 attempt (on these intervals a
    # fifth and a thirteenth of the attempts are rejected)
    key = np.uint64(5)
    for params in [(0.0, 1.0, -0.05, INF), (0.0, 1.0, -3.0, 0.3)]:
        expected, decided = [], []
        for draw, attempt in [(d, a) for d in range(100) for a in (1, 3)]:
            counter = (draw << 24) + 4 * attempt
            uniforms = [_sample_proposals._uniform(key, np.uint64(counter + k)) for k in range(4)]
            expected.append(_sample_proposals._straddling_candidate(*params, *uniforms, True)[1])
            decided.append(_sample_kernels._decide(_sample_proposals._STRADDLING, *params, key, draw, attempt))
        assert decided == expected and rejected in expected


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_kernel_draws_of_a_batch_mixing_every_proposal_follow_each_elements_law(dtype):
    # neighbouring elements take different proposals in one candidate loop, and their rejected draws are gathered
    # among the others': each case's 3,000 elements, interleaved with the other cases', drawn once each
    params = torch.tensor([p for p, _ in CASES] * 3000, dtype=dtype)
    d = TruncatedNormal(*params.T)
    torch.manual_seed(4)
    x = d.sample().view(3000, len(CASES))
    for j, (p, _) in enumerate(CASES):
        assert _ks_pvalue(_distribution([float(torch.tensor(v, dtype=dtype)) for v in p]), x[:, j]) > 1e-3, p


@pytest.mark.parametrize("few_pending", [0, 10**9], ids=["one-candidate-passes", "many-candidate-passes"])
@pytest.mark.parametrize("params", [(0.0, 1.0, -1.0, 2.0), (0.0, 1.0, 3.0, 5.0), (0.0, 1.0, -0.5, 0.5)])
def test_both_ways_of_redrawing_rejected_values_follow_the_distribution(monkeypatch, params, few_pending):
    # the torch route redraws rejected draws one candidate a pass, or, once few are left, several candidates at
    # once keeping the first accepted: each way alone must give the law
    _take_route(monkeypatch, "torch")
    monkeypatch.setattr(_sampling, "_FEW_PENDING", few_pending)
    d = _distribution(params, shape=(20_000,))
    torch.manual_seed(2)
    x = d.sample()
    assert ((x >= params[2]) & (x <= params[3])).all()
    assert _ks_pvalue(_distribution(params), x) > 1e-3


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("count", [1, 3])
def test_elements_that_define_no_distribution_draw_nan_and_the_others_draw_as_alone(monkeypatch, route, count):
    """Unchecked parameters (validate_args=False) that are no distribution -- a NaN anywhere, an infinite loc, a
    scale not positive and finite, crossed bounds -- would keep a rejection loop drawing for ever; low == high draws
    the point."""
    _take_route(monkeypatch, route)
    lawless = [(NAN, 1.0, 0.0, INF), (0.0, 1.0, NAN, INF), (0.0, 1.0, -INF, NAN), (0.0, NAN, 0.0, 1.0),
               (INF, 1.0, 0.0, INF), (0.0, 0.0, 0.0, 1.0), (0.0, -1.0, 0.0, 1.0), (0.0, INF, 0.0, 1.0),
               (0.0, 1.0, 2.0, 1.0)]
    lawful = [p for p, _ in CASES] + [(0.0, 1.0, 1.0, 1.0)]
    params = torch.tensor(lawful + lawless, dtype=torch.float64)
    torch.manual_seed(3)
    x = TruncatedNormal(*params.T, validate_args=False).sample((count,))
    assert x.shape == (count, len(params))
    assert torch.isnan(x[:, len(lawful):]).all()
    low, high = params[:len(lawful), 2], params[:len(lawful), 3]
    assert ((x[:, :len(lawful)] >= low) & (x[:, :len(lawful)] <= high)).all()
    if route == "kernels" and count == 1:  # counter-based draws: the i-th element's one draw is draw i
        torch.manual_seed(3)
        alone = TruncatedNormal(*params[:len(lawful)].T, validate_args=False).sample((count,))
        assert torch.equal(x[:, :len(lawful)], alone)
