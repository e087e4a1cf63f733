"""The Neural Logic Machine.

NLM (Dong et al. 2019), as configured in the paper's appendix and built in its authors' code: breadth 3, depth 5,
8 predicates per arity per inner layer, each arity's MLP a single Linear + sigmoid. Layer k computes, for every
arity r, the concatenation of

* ``expand`` of arity r-1 (copy along a new last object axis),
* arity r itself,
* ``exists`` and ``forall`` of arity r+1 over its last object axis (max / min over the real objects; with
  ``exclude_self``, as in the original NLM, also skipping the objects equal to a kept one),

over all r! permutations of the r object axes, then Linear + sigmoid. In the authors' layout (the default) the
last of the depth layers is the output: its Linear gives the two raw outputs for arity 0, without sigmoid (mu must
reach the scale of h*). In the "paper-text" layout (the paper's text read literally) all depth layers are sigmoid layers and a
Linear reads the two raw outputs from the last one's 8 nullary predicates.

These optimisations of the layers keep the function exactly the same (outputs and gradients tested against
``nlm_reference_forward`` in tests/nlm_reference.py, in float64; the speed figures are in reports/speed.md):

* the Linear is applied *before* expanding and permuting: Linear acts on channels and commutes with both, so each
  part is multiplied by its weight slices for all r! permutations at once on the narrow, unexpanded tensor, and
  only the 8-channel results are permuted and summed;
* the expand part is permuted and summed while it is small: the r! permutations put its constant axis at r
  places, so the big output receives r broadcast terms, not r!;
* arities that cannot reach the output are not computed (with depth 5 and breadth 3: arity 3 only in layers 1-2,
  arity 2 in layers 1-3, ...);
* the big arity tensors, their exists / forall and their gradients are formed by the autograd functions of
  :mod:`tnlib.learning.nlm_autograd` (chunked, fused, sparse where the gradient is), over the numba kernels of
  :mod:`tnlib.learning.nlm_kernels`.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from tnlib.learning import nlm_autograd
from tnlib.learning.encodings import NLMInputs


def nlm_output_arities(depth: int, breadth: int, prune: bool = True) -> list[list[int]]:
    """The arities each layer computes: all of 0..breadth, or (pruned) those that can still reach arity 0.

    Layer k's arity r feeds layer k+1's arities r-1, r, r+1, so it matters iff r <= depth - k; the last layer only
    produces arity 0.
    """
    arities = []
    for k in range(1, depth + 1):
        top = min(breadth, depth - k) if prune else (0 if k == depth else breadth)
        arities.append(list(range(top + 1)))
    return arities




class NLMLayer(nn.Module):
    """One NLM layer: for each output arity r, Linear + sigmoid over [expand r-1, r, exists/forall r+1] x r!.

    ``linears[str(r)].weight`` is laid out ``[out, r! * (C_{r-1} + C_r + 2 C_{r+1})]``: permutation-major (in
    ``itertools.permutations`` order), then the parts in the order expand, self, exists, forall. With
    ``sigmoid=False`` (the authors' output layer) the Linear's output is the layer's, and only arity 0 is
    computed. With ``exclude_self`` exists / forall skip the reduced objects equal to a kept one.
    """

    def __init__(self, in_channels: list[int], out_arities: list[int], width: int, exclude_self: bool = True,
                 sigmoid: bool = True):
        super().__init__()
        if not sigmoid and list(out_arities) != [0]:
            raise ValueError(f"an NLM layer without sigmoid computes arity 0 only, not {out_arities}")
        self.in_channels = list(in_channels)
        self.out_arities = list(out_arities)
        self.width = width
        self.exclude_self = exclude_self
        self.sigmoid = sigmoid
        self.linears = nn.ModuleDict()
        for r in out_arities:
            parts = self.part_sizes(r)
            self.linears[str(r)] = nn.Linear(math.factorial(r) * sum(parts), width)

    def part_sizes(self, r: int) -> tuple[int, int, int]:
        """Channels of (expand from r-1, self r, exists+forall from r+1) feeding output arity r."""
        c = self.in_channels
        expand = c[r - 1] if r >= 1 else 0
        same = c[r] if r < len(c) else 0
        reduce = 2 * c[r + 1] if r + 1 < len(c) else 0
        return expand, same, reduce

    def forward(self, xs: list[torch.Tensor | None], object_mask: torch.Tensor) -> list[torch.Tensor | None]:
        return self.infer(xs, {}, object_mask)[0]

    def infer(self, xs: list[torch.Tensor | None], reductions: dict[int, torch.Tensor], object_mask: torch.Tensor,
              reduce_only: frozenset[int] = frozenset(),
              fused: bool = False) -> tuple[list[torch.Tensor | None], dict[int, torch.Tensor]]:
        """``forward`` with arities handed over as their exists / forall: ``reductions[r]`` stands for
        ``nlm_autograd.exists_forall(xs[r])``, and the second value holds those of this layer's outputs that were formed
        with them. With ``fused`` (CPU) an arity-3 output in ``reduce_only`` is formed as its exists / forall only
        (stored for the backward when gradients are needed), and one of broadcast expand terms alone comes with its
        reduction from the same pass."""
        outputs: list[torch.Tensor | None] = [None] * len(self.in_channels)
        reduced: dict[int, torch.Tensor] = {}

        def exists_forall(r: int) -> torch.Tensor:
            if r in reductions:
                return reductions[r]
            return nlm_autograd.exists_forall(xs[r], object_mask, self.exclude_self)

        if not self.sigmoid:  # arity 0: no objects to expand or permute, a plain Linear
            pieces = [x for x, c in ((xs[0], self.in_channels[0]),) if c]
            if len(self.in_channels) > 1 and self.in_channels[1]:
                pieces.append(exists_forall(1))
            outputs[0] = self.linears["0"](torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0])
            return outputs, reduced
        for r in self.out_arities:
            linear = self.linears[str(r)]
            c_expand, c_same, c_reduce = self.part_sizes(r)
            perms = nlm_autograd.object_permutations(r)
            # weight [out, r!, C_in] -> per part [r! * out, c]: one matmul gives every permutation's contribution
            weight = linear.weight.view(self.width, len(perms), c_expand + c_same + c_reduce)

            def stacked(start: int, stop: int) -> torch.Tensor:
                return weight[:, :, start:stop].transpose(0, 1).reshape(len(perms) * self.width, stop - start)

            # The expand part is constant along its new axis: project and permute it while it is small
            # ([B, N^(r-1), out]) and add up the permutations that put the new axis at the same place d, so that
            # the big output receives r broadcast terms instead of r!.
            small: list[torch.Tensor | None] = [None] * r
            if c_expand:
                # unbind (not indexing) so the backward stacks once instead of scattering into zeros r! times
                projected = nlm_autograd.tall_projection(xs[r - 1], stacked(0, c_expand))
                projected = projected.unflatten(-1, (len(perms), self.width))
                for term, perm in zip(projected.unbind(-2), perms):
                    d = perm.index(r - 1)
                    rest = [perm[a] for a in range(r) if a != d]  # their source axes, in output order
                    if rest != sorted(rest):
                        term = term.permute(0, *[1 + a for a in rest], term.dim() - 1)
                    small[d] = term if small[d] is None else small[d] + term
            local = None
            if c_same + c_reduce:
                pieces = [xs[r]] if c_same else []
                if c_reduce:
                    pieces.append(exists_forall(r + 1))
                local = torch.cat(pieces, dim=-1) if len(pieces) > 1 else pieces[0]
            w_local = stacked(c_expand, c_expand + c_same + c_reduce) if local is not None else None
            n = object_mask.shape[1]
            if r in reduce_only and nlm_autograd.needs_grad(local, w_local, linear.bias, *small):
                reduced[r] = nlm_autograd.ProjectedExtrema.apply(object_mask, self.exclude_self, local, w_local,
                                                                 linear.bias, *small)
            elif r in reduce_only:
                reduced[r] = nlm_autograd.projected_extrema(local, w_local, linear.bias, tuple(small), object_mask,
                                                            self.exclude_self)
            elif fused and r == 3 and local is None and not nlm_autograd.needs_grad(linear.bias, *small):
                outputs[r], reduced[r] = nlm_autograd.broadcast_sum_sigmoid(linear.bias, tuple(small), object_mask,
                                                                            self.exclude_self)
            elif fused and r == 3 and local is None:
                outputs[r], reduced[r] = nlm_autograd.BroadcastSumExtrema.apply(object_mask, self.exclude_self,
                                                                                linear.bias, *small)
            elif nlm_autograd.needs_grad(local, w_local, linear.bias, *small):
                outputs[r] = nlm_autograd.PermutedSumSigmoid.apply(n, local, w_local, linear.bias, *small)
            else:
                outputs[r] = nlm_autograd.permuted_sum_sigmoid(n, local, w_local, linear.bias, tuple(small))
        return outputs, reduced


# The NLM's layouts (``NLM(layout=...)``): "authors", the authors' code (their NLMCarlosV2): depth - 1 sigmoid
# layers, then an NLM layer whose Linear gives the two raw outputs from the arity-0 inputs (the last sigmoid
# layer's nullary predicates and exists / forall of its unary ones), without sigmoid. "paper-text", tnlib's first
# reading of the paper's "depth 5": depth sigmoid layers, then a Linear from the last one's nullary predicates.
NLM_LAYOUTS = ("authors", "paper-text")


class NLM(nn.Module):
    """Neural Logic Machine over object tensors (``NLMInputs``) -> raw ``[B, 2]``.

    ``width`` predicates per arity in every sigmoid layer; ``layout`` see ``NLM_LAYOUTS``; with ``exclude_self``
    reductions skip the objects equal to a kept one. The defaults are the authors' code's.
    """

    ARG_CHOICES = {"layout": NLM_LAYOUTS}

    def __init__(self, input_channels: list[int], breadth: int = 3, depth: int = 5, width: int = 8,
                 prune: bool = True, layout: str = "authors", exclude_self: bool = False):
        super().__init__()
        if depth < 1 or breadth < 0 or width < 1:
            raise ValueError(f"NLM needs depth >= 1, breadth >= 0 and width >= 1 (got {depth}, {breadth}, {width})")
        if layout not in NLM_LAYOUTS:
            raise ValueError(f"NLM's layout must be one of {', '.join(NLM_LAYOUTS)}, got {layout!r}")
        channels = list(input_channels) + [0] * (breadth + 1 - len(input_channels))
        if len(channels) != breadth + 1:
            raise ValueError(f"input has arities up to {len(input_channels) - 1}, more than the breadth {breadth}")
        self.input_channels, self.breadth, self.depth, self.width = channels, breadth, depth, width
        self.layout, self.exclude_self = layout, exclude_self
        arities = nlm_output_arities(depth, breadth, prune)
        sigmoid_layers = arities[:-1] if layout == "authors" else arities
        self.layers = nn.ModuleList()
        for out_arities in sigmoid_layers:
            self.layers.append(NLMLayer(channels, out_arities, width, exclude_self))
            channels = [width if r in out_arities else 0 for r in range(breadth + 1)]
        if layout == "authors":
            self.output_layer, self.readout = NLMLayer(channels, [0], 2, exclude_self, sigmoid=False), None
        else:
            self.output_layer, self.readout = None, nn.Linear(width, 2)
        self.reset_parameters()

    # Glorot and Bengio's gain for sigmoid units (4: sigmoid'(0) = 1/4). With PyTorch's default init the
    # difference between two states shrinks ~20x per layer through the sigmoids and max/min reductions (outputs
    # differ by ~1e-8 after five layers), and a few hundred steps leave the model a constant; with this gain it
    # learns at once (data/small blocksworld, fixed/none, 300 steps: validation MSE 15.2 -> 5.2). The paper does
    # not specify an initialisation. The linear output (layer or readout) keeps PyTorch's default.
    SIGMOID_GAIN = 4.0

    def reset_parameters(self) -> None:
        for layer in self.layers:
            for linear in layer.linears.values():
                nn.init.xavier_uniform_(linear.weight, gain=self.SIGMOID_GAIN)
                nn.init.zeros_(linear.bias)

    def forward(self, inputs: NLMInputs) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return self._infer(inputs)
        # with gradients the whole batch at once: the arity-3 outputs the next layer only reduces are still stored
        # (their backward reads them), but formed together with their exists / forall
        return self._infer_chunk(list(inputs.tensors), inputs.object_mask)

    def forward_by_layers(self, inputs: NLMInputs) -> torch.Tensor:
        """The forward pass layer by layer, every arity tensor stored (what training differentiates; without
        gradients, ``forward`` computes the same in bounded memory)."""
        xs: list[torch.Tensor | None] = list(inputs.tensors)
        for layer in self.layers:
            xs = layer(xs, inputs.object_mask)
        if self.output_layer is not None:
            return self.output_layer(xs, inputs.object_mask)[0]
        return self.readout(xs[0])

    # Without gradients nothing needs to outlive its layer, so the batch goes through the whole network a chunk of
    # states at a time, each chunk's largest tensor within this many bytes: at the paper's test sizes one
    # expansion's successors would otherwise hold GBs (gripper with 100 balls: 104 objects, 36 MB per state for
    # each arity-3 tensor, about 200 successors).
    INFERENCE_CHUNK_BYTES = 1 << 26

    def _infer(self, inputs: NLMInputs) -> torch.Tensor:
        mask = inputs.object_mask
        batch, n = mask.shape
        per_state = max(1, n ** self.breadth * max(self.width, *self.input_channels) * inputs.tensors[0].element_size())
        step = max(1, self.INFERENCE_CHUNK_BYTES // per_state)
        if step >= batch:
            return self._infer_chunk(list(inputs.tensors), mask)
        return torch.cat([self._infer_chunk([t[start:start + step] for t in inputs.tensors], mask[start:start + step])
                          for start in range(0, batch, step)])

    def _infer_chunk(self, xs: list[torch.Tensor | None], mask: torch.Tensor) -> torch.Tensor:
        """The forward pass of a few states; an arity-3 output that the next layer only reduces is never stored
        (``NLMLayer.infer``)."""
        reductions: dict[int, torch.Tensor] = {}
        stages = list(self.layers) + ([self.output_layer] if self.output_layer is not None else [])
        fused = nlm_autograd.use_kernels(xs[0])
        for k, layer in enumerate(stages):
            following = stages[k + 1].out_arities if k + 1 < len(stages) else [0]
            reduce_only = frozenset(r for r in layer.out_arities
                                    if fused and r == 3 and r not in following and r + 1 not in following)
            xs, reductions = layer.infer(xs, reductions, mask, reduce_only, fused)
        if self.output_layer is not None:
            return xs[0]
        return self.readout(xs[0])
