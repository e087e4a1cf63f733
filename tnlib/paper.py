"""The paper's constants, in one place.

*"Truncated Gaussians for heuristic learning"* (IJCAI 2024) fixes these values; every module that needs one imports
it from here, so a reader checks them against the paper once and a change happens in one line.
"""
from __future__ import annotations

import math

# The four domains of the paper's experiments (keys of tnlib/planning/domains/), in the order its tables list them.
DOMAINS = ("blocksworld", "ferry", "gripper", "visitall")

# GBFS stops after this many heuristic evaluations per problem (Table 2); an unsolved problem counts as this many.
# The datasets' satisficing upper bound h_sat uses the same limit.
MAX_EVALUATIONS = 10_000

# Truncated Gaussian with open bounds (appendix): TN(mu, sigma, l - eps, u + eps), so a lower bound l that equals h*
# does not reward mu -> -inf.
OPEN_BOUND_EPSILON = 0.1

# sigma when it is not learned: 1/sqrt(2), which makes the Gaussian NLL the squared error plus a constant (the
# paper's text; its authors' code used sqrt(2)).
FIXED_SIGMA = 1.0 / math.sqrt(2.0)

# The head's choices (tnlib.learning.heads) and the dataset columns they read (tnlib.data.loading).
DISTRIBUTIONS = ("N", "TN")
SIGMA_MODES = ("learn", "fixed")
RESIDUALS = ("ff", "lmcut", "none")
LOWER_BOUNDS = ("lmcut", "hmax", "blind", "none")
UPPER_BOUNDS = ("none", "h_sat")

# The linear model's four features (Gomoluch et al. 2017), as tnlib.planning.heuristics names them: goal count,
# h_FF, and the total and mean number of delete effects its relaxed plan ignores. Dataset columns spell the last two
# with an ``ff_`` prefix (tnlib.data.schema.FEATURE_COLUMNS).
LINEAR_FEATURES = ("goalcount", "ff", "ignored_deletes_total", "ignored_deletes_mean")

# (sigma, residual) configurations: the two of the main tables (Table 2, the sweep's default) and Table 1's four.
PAPER_CONFIGS = (("learn", "ff"), ("fixed", "none"))
TABLE1_CONFIGS = (("learn", "ff"), ("learn", "none"), ("fixed", "ff"), ("fixed", "none"))
# Table 1 bolds the best of N, N+clip and TN only when it beats the second best by more than this.
TABLE1_BOLD_GAP = 0.1

# Dataset generation: attempts per instance before a slot is given up (the paper's 20).
MAX_ATTEMPTS = 20
