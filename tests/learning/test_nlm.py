"""The NLM (tnlib.learning.nlm, its kernels and its autograd functions) against straightforward references:
optimised vs naive, padding, pruning, object permutations, the inference and training routes."""
from __future__ import annotations

import pytest
import torch

from fixtures.heuristic_items import small_items
from tnlib.learning.encodings import NLMEncoder, NLMInputs
from tnlib.learning import nlm, nlm_autograd, nlm_kernels
from nlm_reference import _usable, nlm_reference_forward
from tnlib.learning.nlm import NLM, nlm_output_arities


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def random_nlm_inputs(channels, counts, n=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = n or max(counts)
    tensors = [torch.rand((len(counts),) + (n,) * r + (c,), generator=g, dtype=torch.float64)
               for r, c in enumerate(channels)]
    mask = torch.arange(n)[None, :] < torch.tensor(counts)[:, None]
    return NLMInputs(tensors, mask)


def randomized(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def assert_forward_and_gradients_equal_the_reference(model, inputs, *also):
    """The model's output and its gradients to parameters and inputs equal nlm_reference_forward's to 1e-12 (float64);
    ``also``: more conditions that must hold (checked after the forward and backward ran)."""
    for t in inputs.tensors:
        t.requires_grad_(True)
    fast = model(inputs)
    grads_fast = torch.autograd.grad(fast.sum(), list(model.parameters()) + inputs.tensors)
    slow = nlm_reference_forward(model, inputs)
    grads_slow = torch.autograd.grad(slow.sum(), list(model.parameters()) + inputs.tensors)
    assert all(condition() for condition in also)
    assert fast.abs().max() > 0.1  # not trivially zero
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)
    for a, b in zip(grads_fast, grads_slow):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_nlm_layer_arities_skip_what_cannot_reach_the_output():
    assert nlm_output_arities(5, 3) == [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2], [0, 1], [0]]
    assert nlm_output_arities(5, 3, prune=False) == [[0, 1, 2, 3]] * 4 + [[0]]


LAYOUTS = [(layout, exclude) for layout in nlm.NLM_LAYOUTS for exclude in (False, True)]


def test_nlm_default_is_the_authors_layout():
    # the authors' NLMCarlosV2 at depth 5, breadth 3: four sigmoid layers (arities 3, 3, 2, 1 at the top) and an
    # output NLM layer whose Linear reads the nullary predicates and exists / forall of the unary ones, no sigmoid
    channels = [2, 6, 4, 2]
    model = NLM(channels)
    assert (model.layout, model.exclude_self, model.width) == ("authors", False, 8)
    assert [layer.out_arities for layer in model.layers] == [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2], [0, 1]]
    assert all(layer.sigmoid for layer in model.layers) and model.readout is None
    output = model.output_layer
    assert not output.sigmoid and list(output.linears) == ["0"]
    assert output.linears["0"].weight.shape == (2, 8 + 2 * 8)
    assert model.double()(random_nlm_inputs(channels, counts=[3, 2])).shape == (2, 2)
    # the paper-text layout: five sigmoid layers and a Linear readout of the last one's nullary predicates
    earlier = NLM(channels, layout="paper-text", exclude_self=True)
    assert len(earlier.layers) == 5 and earlier.output_layer is None and earlier.readout.weight.shape == (2, 8)
    with pytest.raises(ValueError, match="layout must be one of authors, paper-text"):
        NLM(channels, layout="paper")


@pytest.mark.parametrize("layout, exclude_self", LAYOUTS)
def test_nlm_optimised_forward_and_gradients_equal_the_reference_in_float64(layout, exclude_self):
    channels = [2, 6, 4, 2]
    model = randomized(NLM(channels, layout=layout, exclude_self=exclude_self).double())
    assert_forward_and_gradients_equal_the_reference(model, random_nlm_inputs(channels, counts=[5, 3, 4, 1]))


def test_nlm_reference_is_sensitive_to_permutation_order():
    # the reference must be able to disagree: swapping two weight blocks of a permuted arity changes outputs
    channels = [2, 6, 4, 2]
    model = randomized(NLM(channels).double())
    inputs = random_nlm_inputs(channels, counts=[5, 4])
    before = model(inputs)
    with torch.no_grad():
        w = model.layers[1].linears["2"].weight
        half = w.shape[1] // 2
        w.copy_(torch.cat([w[:, half:], w[:, :half]], dim=1))
    assert (nlm_reference_forward(model, inputs) - before).abs().max() > 1e-3


def test_exclude_self_changes_the_function_and_skips_the_kept_objects():
    channels = [2, 6, 4, 2]
    inputs = random_nlm_inputs(channels, counts=[5, 3])
    model = randomized(NLM(channels).double())
    with_self = model(inputs)
    model.exclude_self = False
    for layer in list(model.layers) + [model.output_layer]:
        layer.exclude_self = True
    assert (model(inputs) - with_self).abs().max() > 1e-6
    # the reference's authors' rule (kept positions with a repeated object reduce over nothing) and tnlib's (skip
    # the reduced objects equal to a kept one) differ inside, where the output never looks
    x = torch.rand(1, 3, 3, 3, 1, dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.bool)
    reduced = nlm_autograd.exists_forall(x, mask, True)[0, 1, 1]
    assert reduced.tolist() == [float(x[0, 1, 1, [0, 2]].max()), float(x[0, 1, 1, [0, 2]].min())]
    assert not _usable(mask, 2, True)[0, 1, 1].any() and _usable(mask, 2, True, kept_repeats=False)[0, 1, 1].sum() == 2
    assert nlm_autograd.exists_forall(x, mask, False)[0, 1, 1].tolist() == [float(x[0, 1, 1].max()), float(x[0, 1, 1].min())]


@pytest.mark.parametrize("layout", nlm.NLM_LAYOUTS)
def test_nlm_pruned_equals_unpruned(layout):
    channels = [2, 6, 4, 0]
    pruned = randomized(NLM(channels, layout=layout).double())
    full = randomized(NLM(channels, prune=False, layout=layout).double(), seed=5)
    full.load_state_dict(pruned.state_dict(), strict=False)
    inputs = random_nlm_inputs(channels, counts=[4, 2])
    assert len(full.state_dict()) > len(pruned.state_dict())
    torch.testing.assert_close(pruned(inputs), nlm_reference_forward(full, inputs), rtol=0, atol=1e-12)


def test_nlm_padded_objects_do_not_change_outputs(folder):
    items = small_items("blocksworld", folder)
    encoder = NLMEncoder("blocksworld")
    model = randomized(NLM(encoder.input_channels).double())
    examples = [encoder.encode(i).inputs for i in items[:6]]
    tight = encoder.collate_examples(examples).double()
    padded = encoder.collate_examples(examples, num_objects=9).double()
    assert padded.tensors[1].shape[1] == 9
    torch.testing.assert_close(model(padded), model(tight), rtol=0, atol=1e-12)
    one_by_one = torch.cat([model(encoder.collate_examples([e]).double()) for e in examples])
    torch.testing.assert_close(model(tight), one_by_one, rtol=0, atol=1e-12)


def test_nlm_is_invariant_to_object_order():
    channels = [2, 6, 4, 2]
    model = randomized(NLM(channels).double())
    inputs = random_nlm_inputs(channels, counts=[4], seed=3)
    perm = torch.tensor([2, 0, 3, 1])
    permuted = []
    for r, t in enumerate(inputs.tensors):
        for axis in range(1, r + 1):
            t = t.index_select(axis, perm)
        permuted.append(t)
    torch.testing.assert_close(model(NLMInputs(permuted, inputs.object_mask)), model(inputs), rtol=0, atol=1e-12)


def _reference_extrema(x, object_mask, exclude_self):
    """exists/forall the plain autograd way: the oracle for the kernels (values and the tie-splitting gradient)."""
    mask = _usable(object_mask, x.dim() - 3, exclude_self, kept_repeats=False)
    axis = x.dim() - 2
    return torch.cat([x.masked_fill(~mask, 0.0).amax(dim=axis), x.masked_fill(~mask, 1.0).amin(dim=axis)], dim=-1)


@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("arity", [1, 2, 3])
def test_masked_extrema_kernels_equal_autograd_bit_for_bit(dtype, arity, exclude_self):
    # values from a small set, so that ties are everywhere (symmetric objects give exact ties in practice), and
    # padded objects; the gradient of a tied extremum is split evenly, filled entries counted
    g = torch.Generator().manual_seed(arity)
    n, counts = 5, [5, 3, 4, 1]
    levels = torch.tensor([0.0, 0.25, 0.5, 1.0], dtype=dtype)
    x = levels[torch.randint(4, (len(counts),) + (n,) * arity + (3,), generator=g)]
    object_mask = torch.arange(n)[None, :] < torch.tensor(counts)[:, None]
    grad = torch.rand((len(counts),) + (n,) * (arity - 1) + (6,), generator=g, dtype=dtype)
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    fast, slow = nlm_autograd.exists_forall(a, object_mask, exclude_self), _reference_extrema(b, object_mask, exclude_self)
    assert torch.equal(fast, slow)
    fast.backward(grad)
    slow.backward(grad)
    assert torch.equal(a.grad, b.grad)
    axis = x.dim() - 2  # the case is exercised: some extremum is attained by several entries
    assert ((x.masked_fill(~_usable(object_mask, axis - 1, exclude_self, kept_repeats=False), 0.0) == slow[..., :3].unsqueeze(axis))
            .sum(axis) > 1).any()
    with torch.no_grad():  # the inference route (no autograd function) gives the same values
        assert torch.equal(nlm_autograd.exists_forall(x, object_mask, exclude_self), slow)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_masked_extrema_without_kernels_equal_the_kernels(monkeypatch, exclude_self):
    # the torch route (CUDA, half precision) against the kernels, forward and backward
    g = torch.Generator().manual_seed(1)
    x = torch.rand(3, 4, 4, 4, 2, generator=g, dtype=torch.float64)
    object_mask = torch.arange(4)[None, :] < torch.tensor([4, 2, 3])[:, None]
    grad = torch.rand(3, 4, 4, 4, generator=g, dtype=torch.float64)
    results = []
    for kernels in (True, False):
        monkeypatch.setattr(nlm_autograd, "use_kernels", lambda t, kernels=kernels: kernels)
        leaf = x.clone().requires_grad_(True)
        out = nlm_autograd.exists_forall(leaf, object_mask, exclude_self)
        out.backward(grad)
        results.append((out.detach(), leaf.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_nlm_equals_the_reference_when_chunked_and_split_among_threads(monkeypatch):
    # tiny chunks and work thresholds: every chunked loop runs several chunks, every kernel call is split
    monkeypatch.setattr(nlm_autograd, "CHUNK_BYTES", 512)
    monkeypatch.setattr(nlm_kernels, "SPLIT_WORK", 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        channels = [2, 6, 4, 2]
        model = randomized(NLM(channels).double(), seed=4)
        inputs = random_nlm_inputs(channels, counts=[5, 3, 4, 1, 5, 2], seed=4)
        for t in inputs.tensors:
            t.requires_grad_(True)
        fast = model(inputs)
        grads = torch.autograd.grad(fast.sum(), list(model.parameters()) + inputs.tensors)
        slow = nlm_reference_forward(model, inputs)
        ref = torch.autograd.grad(slow.sum(), list(model.parameters()) + inputs.tensors)
        torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)
        for a, b in zip(grads, ref):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
        with torch.no_grad():  # the inference route gives the same outputs
            torch.testing.assert_close(model(inputs), slow, rtol=0, atol=1e-12)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("layout, exclude_self", LAYOUTS)
@pytest.mark.parametrize("channels", [[2, 6, 4, 2], [2, 6, 4, 0], [0, 3, 0, 2]])
def test_nlm_inference_forward_equals_the_reference_in_float64(monkeypatch, layout, exclude_self, channels):
    # without gradients the forward goes a few states at a time (tiny chunks here), the last arity-3 layer is
    # projected and reduced without being stored and an expand-only arity 3 comes with its reduction; 11 objects
    # leave partial cubes in the kernels' tiles, padded objects are masked, and two threads split each state
    monkeypatch.setattr(NLM, "INFERENCE_CHUNK_BYTES", 1)
    monkeypatch.setattr(nlm_kernels, "SPLIT_WORK", 1)
    model = randomized(NLM(channels, layout=layout, exclude_self=exclude_self).double(), seed=len(channels))
    inputs = random_nlm_inputs(channels, counts=[11, 7, 9], seed=3)
    slow = nlm_reference_forward(model, inputs)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.no_grad():
            fast = model(inputs)
    finally:
        torch.set_num_threads(threads)
    assert fast.abs().max() > 0.1
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)


def test_nlm_inference_forward_stores_no_arity_3_tensor_the_next_layer_only_reduces(monkeypatch):
    # the second layer's arity-3 output reaches the third layer only through exists / forall: the inference
    # forward never forms it with permuted_sum_sigmoid, the layer-by-layer route does
    channels = [2, 6, 4, 0]
    model = randomized(NLM(channels).double())
    inputs = random_nlm_inputs(channels, counts=[6, 6])
    stored = []
    original = nlm_autograd.permuted_sum_sigmoid

    def recording(n, x, w, bias, small):
        stored.append(len(small))
        return original(n, x, w, bias, small)

    monkeypatch.setattr(nlm_autograd, "permuted_sum_sigmoid", recording)
    with torch.no_grad():
        model(inputs)
        assert 3 not in stored
        model.forward_by_layers(inputs)
    assert stored.count(3) == 2


def test_nlm_inference_forward_equals_the_layer_by_layer_route_in_float32():
    channels = [2, 6, 4, 0]
    model = randomized(NLM(channels), seed=1)
    double = random_nlm_inputs(channels, counts=[20, 13, 17], seed=5)
    inputs = NLMInputs([t.float() for t in double.tensors], double.object_mask)
    with torch.no_grad():
        fused, layered = model(inputs), model.forward_by_layers(inputs)
    assert fused.dtype == torch.float32 and layered.abs().max() > 0.1
    torch.testing.assert_close(fused, layered, rtol=0, atol=1e-5)


def test_nlm_expand_only_and_self_only_arities_equal_the_reference():
    # input arities without channels leave some first-layer outputs fed by one part alone: [2, 0, 0, 3] gives an
    # expand-only arity 1, a reduce-only arity 2 and a self-only arity 3
    for channels in ([2, 0, 0, 3], [0, 3, 0, 2], [3, 0, 2, 0]):
        model = randomized(NLM(channels, depth=4).double(), seed=len(channels))
        inputs = random_nlm_inputs(channels, counts=[4, 3], seed=2)
        params = list(model.parameters())
        fast = model(inputs)
        slow = nlm_reference_forward(model, inputs)
        torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)
        for a, b in zip(torch.autograd.grad(fast.sum(), params, allow_unused=True),
                        torch.autograd.grad(slow.sum(), params, allow_unused=True)):
            assert (a is None) == (b is None)
            if a is not None:
                torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_nlm_initialisation_keeps_states_apart(folder):
    # with PyTorch's default init the states' outputs differ by ~1e-8 after five sigmoid layers and training
    # stalls; the sigmoid gain keeps them measurably apart (see NLM.reset_parameters)
    items = small_items("blocksworld", folder)
    encoder = NLMEncoder("blocksworld")
    batch = encoder.collate([encoder.encode(i) for i in items[:12]])
    spreads = []
    for seed in range(3):
        torch.manual_seed(seed)
        with torch.no_grad():
            raw = NLM(encoder.input_channels)(batch.inputs)[:, 0]
        spreads.append(float(raw.max() - raw.min()))
    assert min(spreads) > 1e-3, spreads
    default = NLM(encoder.input_channels)
    for layer in default.layers:  # PyTorch's default Linear init, for contrast
        for linear in layer.linears.values():
            linear.reset_parameters()
    with torch.no_grad():
        raw = default(batch.inputs)[:, 0]
    assert float(raw.max() - raw.min()) < min(spreads) / 100


def test_kernels_split_among_threads_call_a_single_threaded_blas():
    from threadpoolctl import threadpool_info

    with nlm_kernels.single_threaded_blas():
        scipy_blas = [i for i in threadpool_info() if i["user_api"] == "blas" and "scipy.libs" in i["filepath"]]
        assert scipy_blas and all(i["num_threads"] == 1 for i in scipy_blas)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_nlm_gradients_through_the_sparse_backward_equal_the_reference_in_float64(monkeypatch, exclude_self):
    # every permuted sum with an input takes the sparse backward (at these sizes the gradients are too dense for it)
    monkeypatch.setattr(nlm_autograd, "SPARSE_SHARE", 1.0)
    calls = []
    original = nlm_autograd.sparse_permuted_backward
    monkeypatch.setattr(nlm_autograd, "sparse_permuted_backward", lambda *args: calls.append(1) or original(*args))
    channels = [2, 6, 4, 2]
    model = randomized(NLM(channels, exclude_self=exclude_self).double(), seed=2)
    inputs = random_nlm_inputs(channels, counts=[5, 3, 4, 1], seed=2)
    for t in inputs.tensors:
        t.requires_grad_(True)
    grads = torch.autograd.grad(model(inputs).sum(), list(model.parameters()) + inputs.tensors)
    reference = torch.autograd.grad(nlm_reference_forward(model, inputs).sum(),
                                    list(model.parameters()) + inputs.tensors)
    assert len(calls) >= 3  # arity 2 of three layers, arity 3 of two
    for a, b in zip(grads, reference):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_nlm_training_through_the_sparse_backward_follows_the_dense_one(monkeypatch):
    # the same steps (AdamW at the paper's learning rate, the sum of the outputs as the loss) through either
    # backward end with the same weights, in float64 where the two orders of summation differ by 1e-16
    channels = [2, 6, 4, 2]
    inputs = random_nlm_inputs(channels, counts=[5, 3, 4, 1], seed=3)
    trained = []
    for share in (0.0, 1.0):
        monkeypatch.setattr(nlm_autograd, "SPARSE_SHARE", share)
        torch.manual_seed(0)
        model = NLM(channels).double()
        initial = {key: value.clone() for key, value in model.state_dict().items()}
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
        for _ in range(30):
            optimizer.zero_grad()
            model(inputs).square().mean().backward()
            optimizer.step()
        trained.append(model.state_dict())
    moved = max(float((trained[1][key] - initial[key]).abs().max()) for key in initial)
    assert moved > 1e-3  # the steps changed the weights
    for key in trained[0]:
        torch.testing.assert_close(trained[1][key], trained[0][key], rtol=0, atol=1e-9)


def real_positions(mask, r):
    """Bool ``[B, N, ..., N, 1]`` (r object axes): the positions whose objects are all real."""
    real = torch.ones(mask.shape[:1] + (1,) * r, dtype=torch.bool)
    for axis in range(r):
        real = real & mask.view(mask.shape[:1] + (1,) * axis + mask.shape[1:] + (1,) * (r - 1 - axis))
    return real.unsqueeze(-1)


def test_arity_3_kernels_give_the_positions_with_a_padded_object_constants():
    # a padded object never reaches the output, so the kernels visit the real objects alone: the positions with a
    # padded object hold sigmoid(0) and the extrema of an empty range (exists 0, forall 1), whatever the inputs
    x, w, bias, small, mask = projected_extrema_case(torch.float32)
    padded_cubes, padded_pairs = ~real_positions(mask, 3), ~real_positions(mask, 2)
    for extrema, y in (nlm_autograd.projected_extrema(x, w, bias, small, mask, False, store=True),
                       nlm_autograd.broadcast_sum_sigmoid(bias, small, mask, False)[::-1]):
        assert bool((y.masked_select(padded_cubes) == 0.5).all())
        width = y.shape[-1]
        assert bool((extrema[..., :width].masked_select(padded_pairs) == 0).all())
        assert bool((extrema[..., width:].masked_select(padded_pairs) == 1).all())
    assert padded_cubes.sum() > 0


def projected_extrema_case(dtype, seed=5, batch=3, n=5, inputs=3, width=4):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand((batch, n, n, n, inputs), generator=g, dtype=dtype)
    w = torch.randn((6 * width, inputs), generator=g, dtype=dtype)
    bias = torch.randn(width, generator=g, dtype=dtype)
    small = tuple(torch.randn((batch, n, n, width), generator=g, dtype=dtype) for _ in range(3))
    mask = torch.arange(n)[None, :] < torch.tensor([n, 3, 4])[:batch, None]
    return x, w, bias, small, mask


@pytest.mark.parametrize("exclude_self", [False, True])
def test_projected_extrema_training_function_passes_gradcheck(exclude_self):
    x, w, bias, small, mask = projected_extrema_case(torch.float64)
    leaves = [t.requires_grad_(True) for t in (x, w, bias) + small]
    assert torch.autograd.gradcheck(
        lambda *args: nlm_autograd.ProjectedExtrema.apply(mask, exclude_self, *args), leaves, eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_projected_extrema_training_function_equals_the_stored_route_in_float32(exclude_self):
    # the fused route (one kernel forward, one backward) against the permuted sum, then exists / forall, each with
    # its own autograd function: the same output y (torch's sigmoid of the same sums up to the sums' rounding), so
    # the comparison feeds the stored route the fused route's y and checks the backward's numbers: the bias's and
    # the expand terms' bit for bit, x's and the weight's (products over the tied entries, summed in another
    # order) to float32's rounding (at the positions of real objects: the fused route gives those with a padded
    # object constants)
    x, w, bias, small, mask = projected_extrema_case(torch.float32)
    extrema, y = nlm_autograd.projected_extrema(x, w, bias, small, mask, exclude_self, store=True)
    stored = nlm_autograd.PermutedSumSigmoid.apply(5, x, w, bias, *small)
    cubes, pairs = real_positions(mask, 3), real_positions(mask, 2)
    torch.testing.assert_close(y.masked_select(cubes), stored.masked_select(cubes), rtol=0, atol=1e-6)
    reduced = nlm_autograd.exists_forall(stored, mask, exclude_self).view(extrema.shape)
    torch.testing.assert_close(extrema.masked_select(pairs), reduced.masked_select(pairs), rtol=0, atol=1e-6)
    grad = torch.randn(extrema.shape, generator=torch.Generator().manual_seed(1)) * pairs
    leaf = y.clone().requires_grad_(True)
    dense = torch.autograd.grad(nlm_autograd.exists_forall(leaf, mask, exclude_self).view(grad.shape),
                                leaf, grad)[0]
    needs = [True, True, True]
    two_kernels = nlm_autograd.sparse_permuted_backward(5, dense, y, x, w, needs)
    fused = nlm_autograd.sparse_permuted_backward(5, grad, y, x, w, needs, (mask, exclude_self))
    for a, b in zip(two_kernels[:2], fused[:2]):
        assert float(a.abs().max()) > 0.1
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6 * float(a.abs().max()))
    for a, b in zip(two_kernels[2:3] + tuple(two_kernels[3]), fused[2:3] + tuple(fused[3])):
        assert torch.equal(a, b)


def test_projected_extrema_backward_equals_the_two_kernel_route_in_float64_past_one_batch_of_tied_entries():
    # the fused backward multiplies the tied entries' shares out a batch of TIED_ENTRIES at a time: a state with
    # more tied entries than that takes the same gradients as the two kernels in a row (extrema's backward, then
    # the sparse permuted backward), in float64 where the orders of summation differ by 1e-16
    x, w, bias, small, mask = projected_extrema_case(torch.float64, seed=6, batch=2, n=12, inputs=3, width=8)
    mask = torch.ones_like(mask)
    extrema, y = nlm_autograd.projected_extrema(x, w, bias, small, mask, False, store=True)
    grad = torch.randn(extrema.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    leaf = y.clone().requires_grad_(True)
    dense = torch.autograd.grad(nlm_autograd.exists_forall(leaf, mask, False).view(grad.shape), leaf, grad)[0]
    tied_positions = dense.ne(0).any(-1).flatten(1).sum(1)
    assert int(tied_positions.max()) > nlm_kernels.TIED_ENTRIES
    needs = [True, True, True]
    two_kernels = nlm_autograd.sparse_permuted_backward(12, dense, y, x, w, needs)
    fused = nlm_autograd.sparse_permuted_backward(12, grad, y, x, w, needs, (mask, False))
    for a, b in zip(two_kernels[:3] + tuple(two_kernels[3]), fused[:3] + tuple(fused[3])):
        assert float(a.abs().max()) > 0.1
        torch.testing.assert_close(b, a, rtol=0, atol=1e-12)


def test_nlm_training_forms_the_reduced_arity_3_with_its_extrema_and_follows_the_stored_route(monkeypatch):
    # AdamW steps through the training forward (the fused arity 3) and through forward_by_layers (every arity
    # stored, reduced by its own function) end with the same weights, in float64 where the orders of summation
    # differ by 1e-16
    calls = []
    original = nlm_autograd.ProjectedExtrema.apply
    monkeypatch.setattr(nlm_autograd.ProjectedExtrema, "apply", lambda *args: calls.append(1) or original(*args))
    channels = [2, 6, 4, 2]
    inputs = random_nlm_inputs(channels, counts=[5, 3, 4, 1], seed=3)
    trained = []
    for route in ("forward", "forward_by_layers"):
        torch.manual_seed(0)
        model = NLM(channels).double()
        initial = {key: value.clone() for key, value in model.state_dict().items()}
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
        for _ in range(30):
            optimizer.zero_grad()
            getattr(model, route)(inputs).square().mean().backward()
            optimizer.step()
        trained.append(model.state_dict())
    assert len(calls) == 30  # the second layer's arity 3, once a step, on the training forward only
    moved = max(float((trained[1][key] - initial[key]).abs().max()) for key in initial)
    assert moved > 1e-3
    for key in trained[0]:
        torch.testing.assert_close(trained[1][key], trained[0][key], rtol=0, atol=1e-9)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_broadcast_sum_extrema_training_function_passes_gradcheck(exclude_self):
    g = torch.Generator().manual_seed(5)
    bias = torch.randn(4, generator=g, dtype=torch.float64, requires_grad=True)
    small = tuple(torch.randn((3, 5, 5, 4), generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.arange(5)[None, :] < torch.tensor([5, 3, 4])[:, None]
    assert torch.autograd.gradcheck(lambda *args: nlm_autograd.BroadcastSumExtrema.apply(mask, exclude_self, *args),
                                    (bias,) + small, eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_broadcast_sum_extrema_backward_adds_the_stored_routes_gradients_in_float32(exclude_self):
    # the stored route: exists / forall with its own autograd function, y's gradient the sum of its own and theirs,
    # then the sigmoid's backward; its per-position gradients, summed in float64, are what the fused backward's
    # float32 sums approximate (a wrong tie or share would move them by the size of a gradient)
    g = torch.Generator().manual_seed(6)
    n, width = 6, 4
    bias = torch.randn(width, generator=g)
    small = tuple(torch.randn((3, n, n, width), generator=g) for _ in range(3))
    mask = torch.arange(n)[None, :] < torch.tensor([n, 4, 5])[:, None]
    y, extrema = nlm_autograd.broadcast_sum_sigmoid(bias, small, mask, exclude_self)
    # gradients at the positions of real objects alone, as the NLM gives them (the fused route's positions with a
    # padded object are constants)
    grad_y = torch.randn(y.shape, generator=g) * (torch.rand(y.shape, generator=g) < 0.3) * real_positions(mask, 3)
    grad_extrema = torch.randn(extrema.shape, generator=g) * real_positions(mask, 2)
    leaf = y.clone().requires_grad_(True)
    stored = torch.autograd.grad(nlm_autograd.exists_forall(leaf, mask, exclude_self).view(extrema.shape), leaf,
                                 grad_extrema)[0] + grad_y
    pre = torch.ops.aten.sigmoid_backward(stored, y).double()
    leaves = [t.clone().requires_grad_(True) for t in (bias,) + small]
    fused = nlm_autograd.BroadcastSumExtrema.apply(mask, exclude_self, *leaves)
    grads = torch.autograd.grad(fused, leaves, (grad_y, grad_extrema))
    assert torch.equal(fused[0], y) and torch.equal(fused[1], extrema)
    expected = [pre.sum((0, 1, 2, 3))] + [pre.sum(1 + d) for d in range(3)]
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)


def test_nlm_training_forms_the_expand_only_arity_3_with_its_extrema_and_matches_the_reference():
    # arity-3 inputs of no channels (as every domain of data/paper): the first layer's arity 3 is made of expand
    # terms alone and, in training, comes with its exists / forall from one pass and one backward
    calls = []
    original = nlm_autograd.BroadcastSumExtrema.apply
    channels = [2, 6, 4, 0]
    for exclude_self in (False, True):
        model = randomized(NLM(channels, exclude_self=exclude_self).double(), seed=2)
        inputs = random_nlm_inputs(channels, counts=[5, 3, 4, 1], seed=2)
        for t in inputs.tensors[:3]:
            t.requires_grad_(True)
        leaves = list(model.parameters()) + inputs.tensors[:3]
        try:
            nlm_autograd.BroadcastSumExtrema.apply = lambda *args: calls.append(1) or original(*args)
            grads = torch.autograd.grad(model(inputs).sum(), leaves)
        finally:
            nlm_autograd.BroadcastSumExtrema.apply = original
        reference = torch.autograd.grad(nlm_reference_forward(model, inputs).sum(), leaves)
        for a, b in zip(grads, reference):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    assert len(calls) == 2


def test_sparse_backwards_zero_the_gradient_rows_they_scatter_into(monkeypatch):
    # x's gradient comes from the caller unfilled (the kernels zero each state's rows before its scatter): handed
    # NaNs, both sparse backwards give what they give on fresh memory
    x, w, bias, small, mask = projected_extrema_case(torch.float32)
    extrema, y = nlm_autograd.projected_extrema(x, w, bias, small, mask, False, store=True)
    grad = torch.randn(extrema.shape, generator=torch.Generator().manual_seed(1)) * real_positions(mask, 2)
    leaf = y.clone().requires_grad_(True)
    dense = torch.autograd.grad(nlm_autograd.exists_forall(leaf, mask, False).view(grad.shape), leaf, grad)[0]
    needs = [True, True, True]

    def both():
        return [nlm_autograd.sparse_permuted_backward(5, dense, y, x, w, needs),
                nlm_autograd.sparse_permuted_backward(5, grad, y, x, w, needs, (mask, False))]

    fresh = both()
    monkeypatch.setattr(torch.Tensor, "new_empty",
                        lambda self, size, **kwargs: torch.full(tuple(size), float("nan"), dtype=self.dtype))
    for expected, got in zip(fresh, both()):
        assert float(expected[0].abs().max()) > 0
        for a, b in zip(expected[:3] + tuple(expected[3]), got[:3] + tuple(got[3])):
            assert torch.equal(a, b)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_projected_extrema_backward_takes_the_sigmoid_of_the_reduced_pairs_alone_and_the_same_numbers(exclude_self):
    # the training function stores the sums and takes their sigmoid in the backward only at the pairs whose exists /
    # forall have a gradient (the kernel reads y nowhere else): its gradients are those of the whole output's, bit for
    # bit, with a gradient at a third of the pairs
    x, w, bias, small, mask = projected_extrema_case(torch.float32)
    extrema, y = nlm_autograd.projected_extrema(x, w, bias, small, mask, exclude_self, store=True)
    g = torch.Generator().manual_seed(2)
    grad = torch.randn(extrema.shape, generator=g) * real_positions(mask, 2) * (torch.rand(extrema.shape[:3] + (1,),
                                                                                          generator=g) < 0.3)
    assert 0 < int(grad.ne(0).any(-1).sum()) < grad[..., 0].numel() // 2
    whole = nlm_autograd.sparse_permuted_backward(5, grad, y, x, w, [True] * 3, (mask, exclude_self))
    leaves = [t.clone().requires_grad_(True) for t in (x, w, bias) + small]
    fused = torch.autograd.grad(nlm_autograd.ProjectedExtrema.apply(mask, exclude_self, *leaves), leaves, grad)
    assert float(fused[0].abs().max()) > 0
    for a, b in zip(whole[:3] + tuple(whole[3]), fused):
        assert torch.equal(a, b)


def test_tall_projection_gives_the_gradients_of_a_linear_map_in_float64():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, nlm_autograd.TALL_ROWS // 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(12, 3, generator=g, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(4, nlm_autograd.TALL_ROWS // 4, 12, generator=g, dtype=torch.float64)
    small = x[:2, :5].detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(nlm_autograd.TallProjection.apply, (small, w), eps=1e-6, atol=1e-8)
    projected = nlm_autograd.tall_projection(x, w)
    assert projected.grad_fn.name() == "TallProjectionBackward"
    got = torch.autograd.grad(projected, (x, w), upstream)
    expected = torch.autograd.grad(torch.einsum("bmc,oc->bmo", x, w), (x, w), upstream)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=1e-12)


def test_broadcast_sum_extrema_backward_zeroes_the_expand_gradients_it_sums_into(monkeypatch):
    # the expand terms' gradients come from the caller unfilled (the kernel zeroes each state's before its sums):
    # handed NaNs, the backward gives what it gives on fresh memory, padded pairs' zeros included
    g = torch.Generator().manual_seed(7)
    n, width = 6, 4
    leaves = [t.requires_grad_(True) for t in [torch.randn(width, generator=g)] +
              [torch.randn((3, n, n, width), generator=g) for _ in range(3)]]
    mask = torch.arange(n)[None, :] < torch.tensor([n, 4, 5])[:, None]

    def gradients():
        y, extrema = nlm_autograd.BroadcastSumExtrema.apply(mask, False, *leaves)
        upstream = (torch.randn(y.shape, generator=torch.Generator().manual_seed(8)),
                    torch.randn(extrema.shape, generator=torch.Generator().manual_seed(9)))
        return torch.autograd.grad((y, extrema), leaves, upstream)

    fresh = gradients()
    monkeypatch.setattr(torch.Tensor, "new_empty",
                        lambda self, size, **kwargs: torch.full(tuple(size), float("nan"), dtype=self.dtype))
    for expected, got in zip(fresh, gradients()):
        assert float(expected.abs().max()) > 0 and torch.equal(expected, got)


def test_nlm_gradients_through_the_tall_projections_equal_the_reference_in_float64(monkeypatch):
    # every expand projection through TallProjection (at the tests' sizes they have fewer rows than TALL_ROWS)
    monkeypatch.setattr(nlm_autograd, "TALL_ROWS", 1)
    calls = []
    apply = nlm_autograd.TallProjection.apply
    monkeypatch.setattr(nlm_autograd.TallProjection, "apply", lambda *args: calls.append(1) or apply(*args))
    channels = [2, 6, 4, 2]
    model = randomized(NLM(channels).double())
    assert_forward_and_gradients_equal_the_reference(model, random_nlm_inputs(channels, counts=[5, 3, 4, 1]),
                                                     lambda: bool(calls))
