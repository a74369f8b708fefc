"""Privacy loss distributions (PLD): tight ε with a certified interval.

Each mechanism is described, per direction of the neighbouring relation, by
the distribution of its privacy loss L = log(P(X)/Q(X)), X ~ P, and δ(ε) =
P[L = ∞] + E_P[(1 − e^{ε−L})₊] ([SMM]). The engine is a pipeline, one file a
stage:

* :mod:`.mechanisms` — the loss distributions of one step: Gaussian, Laplace,
  generic (ε, δ), and their Poisson-subsampled (two directions: remove and
  add, [ZDW]) and sampled-without-replacement (the symmetrised hull
  C_q(f) of both, [DRS] Thm 4.2) forms, each with error bounds on its
  floating-point tails.
* :mod:`.discrete` — the discrete mechanisms: discrete Gaussian and
  discrete Laplace (atoms at their integer losses), k-ary randomized
  response, and the pair dominating every ε-bounded-range mechanism
  (exponential mechanism, report-noisy-max with Gumbel noise).
* :mod:`.discretise` — each step on a grid jh (h a power of two), twice:
  *upper*, a dominating PLD by "connect the dots" ([DGKKM]: each bin's mass
  spread onto its end nodes keeping its P- and Q-mass, which can only raise
  every δ(ε), also after composition); *lower*, a dominated one by binning (a
  post-processing of the output) and moving each atom down onto the grid,
  with the moves recorded. Both round every floating-point error toward
  their own safe side.
* :mod:`.fold` — k releases of a two-atom step (an (ε, δ) pair, binary
  randomized response) composed exactly as one binomial step before
  discretising, so the grid rounds their losses once, not k times; a
  Laplace step's lower end may use its threshold post-processing that way
  (thousands of tiny pure-ε releases need no fine grid).
* :mod:`.compose` — T-fold and mixed composition by one FFT power of the
  exponentially tilted steps (tilting by λ centres the composed loss near the
  ε asked about, so the transforms' round-off stays small next to the masses
  δ reads), on a window sized by Chernoff bounds; for reads far out in the
  tilted tail the steps' transforms run in long double — by :mod:`.spectrum`
  only at the low frequencies where the power needs it, from block moments;
  where no tilt centres the reads (a heavy upper tail at tiny δ), every stage.
* :mod:`.jumps` — T releases of one step composed by the number of steps
  that land in its far tail (Σ_k C(T, k)·B^{T−k} * J^k, the terms with four
  or more bounded by their mass): where single steps' rare large losses
  carry δ (small q and σ, 10⁴–10⁶ steps, δ <= 1e-9) and no tilt of the whole
  composition centres its reads, each term is tilted for itself. Used for
  answers that miss their width after the usual composition.
* :mod:`.blocks` — for a narrow step (small q: a few cells of the grid),
  its bulk composed in blocks of B releases on a grid 2^k times finer and
  put onto the coarse grid once (upper: connect the dots; lower: moved
  down, each block's rounding given back as a family of its own), the
  jumps' terms of :mod:`.jumps` then composed on the coarse grid: the
  coarse grid's errors come T/B times instead of T. Used for answers that
  still miss their width after the split — and right after the first one
  where the far tail blocks the whole composition's tilt (small q and σ,
  millions of steps), with blocks tilted for the terms that read them.
* :mod:`.query` — δ at ε and ε at δ from suffix sums taken relative to their
  own losses (nothing over- or underflows at ε in the thousands), each read
  checked against the curve it bounds; and a Chernoff bound on ε from the
  steps' moment generating functions alone, which settles a direction that is
  already below the mechanism's certified lower end without composing it.
* :mod:`.errors` — what is added to an upper δ and taken from a lower one:
  the round-off of the composition (bounded per frequency from the computed
  spectra), the tilted mass that may have wrapped around the window, and the
  concentration of the lower bound's moves (Bernstein: their sum over T
  steps is at least its mean minus a margin, except with probability η, so
  δ_true(ε) >= δ_lower(ε − s) − η — without this give-back the lower bound
  would drift by T times the mean move).
* :mod:`.engine` — accuracy control: the lower end, then the upper ends,
  refined side by side until the interval is narrow enough, coarsened where a
  grid does not fit (small ε: upper ends first, and no lower end where they
  are within the absolute width); answers that still miss their width go to
  the retries. Its stages, each a file:

  * :mod:`.sizing` — the width asked for, sized by a Chernoff estimate of ε
    from the steps' tails, and the first grid, from it and the per-step loss
    spread;
  * :mod:`.directions` — one grid's compositions, per direction of the
    neighbouring relation, with the long-double retries of reads drowned in
    round-off;
  * :mod:`.retries` — the split (:mod:`.jumps`) and the blocks
    (:mod:`.blocks`) for T releases of one step that missed their width;
  * :mod:`.deltas` — δ at given ε (risk profiles), one grid, few tilts.
* :mod:`.exact` — the closed forms that need no grid: T Gaussian steps
  (μ-GDP, q = 1) and a single subsampled Gaussian step (T = 1), as
  certified intervals whose width is round-off only.

Every number the engine returns is a certified bound: the lower end is at
most, and the upper end at least, the true ε of the mechanism; where it
cannot certify an end it raises (the callers fall back to the next sound
method and say so) — it never returns a number it cannot stand behind.

References
----------
.. [SMM] D. Sommer, S. Meiser, E. Mohammadi. Privacy Loss Classes: The Central
   Limit Theorem in Differential Privacy. PETS 2019 (PLD, δ(ε) formula).
.. [KJH] A. Koskela, J. Jälkö, A. Honkela. Computing Tight Differential Privacy
   Guarantees Using FFT. AISTATS 2020, arXiv:1906.03049.
.. [DGKKM] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi.
   Connect the Dots: Tighter Discrete Approximations of Privacy Loss
   Distributions. PETS 2022, arXiv:2207.04380.
.. [ZDW] Y. Zhu, J. Dong, Y.-X. Wang. Optimal Accounting of Differential
   Privacy via Characteristic Function. AISTATS 2022, arXiv:2106.08567
   (dominating pairs of Poisson subsampling: remove and add directions).
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022,
   arXiv:1905.02383 (Thm 4.2: subsampling without replacement, C_q(f)).
"""

from .deltas import Interval, delta_interval
from .discrete import bounded_range, discrete_gaussian, discrete_laplace, generalized_rr, randomized_response
from .engine import ABS_WIDTH, MIN_DELTA, REL_WIDTH, UPPER_H, Answer, epsilon
from .mechanisms import (
    Direction,
    dp,
    gaussian,
    laplace,
    sampled_wor_gaussian,
    sampled_wor_laplace,
    subsampled_dp,
    subsampled_gaussian,
    subsampled_laplace,
)

__all__ = [
    "Direction",
    "gaussian",
    "laplace",
    "dp",
    "subsampled_gaussian",
    "subsampled_dp",
    "subsampled_laplace",
    "sampled_wor_gaussian",
    "sampled_wor_laplace",
    "discrete_gaussian",
    "discrete_laplace",
    "randomized_response",
    "bounded_range",
    "generalized_rr",
    "Answer",
    "Interval",
    "epsilon",
    "delta_interval",
    "MIN_DELTA",
    "UPPER_H",
    "REL_WIDTH",
    "ABS_WIDTH",
]
