"""Noise for an attack-risk target: the μ-GDP level whose best attack stays within a bound.

For a μ-GDP mechanism (a Gaussian mechanism with σ = Δ/μ) the best membership-inference attack has
advantage TPR − FPR = 2Φ(μ/2) − 1 and, at false-positive rate α, TPR = Φ(μ + Φ⁻¹(α)) ([DRS] Def. 2.7;
[KGK] Sec. 3). Both grow with μ, so a target is met exactly by

    μ = 2Φ⁻¹((1 + A)/2)           (advantage at most A),
    μ = Φ⁻¹(T) − Φ⁻¹(α)           (TPR at most T at FPR α; needs T > α),

each returned a little low (a smaller μ is more noise: the safe side). Calibrating to such a target
instead of to (ε, δ) often allows far less noise for the same attack risk ([KGK]).

References
----------
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383.
.. [KGK] B. Kulynych, J. F. Gomez, G. Kaissis, F. du Pin Calmon, C. Troncoso. Attack-Aware Noise
   Calibration for Differential Privacy. NeurIPS 2024, arXiv:2407.02191.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._arrays import all_scalar, checked, finish
from .errors import ValidationError

__all__ = ["mu_for_advantage", "mu_for_tpr"]

#: Relative step down from the computed μ: far above the error of ndtri and the arithmetic around it.
_SAFE = 1e-12


def mu_for_advantage(advantage):
    """Largest μ (rounded down) whose best attack advantage 2Φ(μ/2) − 1 is at most ``advantage`` in (0, 1).

    Computed as 2√2·erf⁻¹(A) for A <= 1/2 (accurate as A approaches 0) and −2Φ⁻¹((1 − A)/2) above (accurate
    as A approaches 1).
    """
    scalar = all_scalar(advantage)
    a = checked("target_advantage", advantage, low=0, high=1)
    with np.errstate(all="ignore"):
        mu = np.where(a <= 0.5, 2.0 * np.sqrt(2.0) * special.erfinv(a), -2.0 * special.ndtri((1.0 - a) / 2.0))
    return finish(mu * (1 - _SAFE), scalar=scalar)


def mu_for_tpr(tpr, fpr):
    """Largest μ (rounded down) whose best attack has TPR at most ``tpr`` at false-positive rate ``fpr``."""
    scalar = all_scalar(tpr, fpr)
    t = checked("target_tpr", tpr, low=0, high=1)
    f = checked("at_fpr", fpr, low=0, high=1)
    t, f = np.broadcast_arrays(t, f)
    if np.any(t <= f):
        k = int(np.flatnonzero((t <= f).ravel())[0])
        raise ValidationError(
            "target_tpr",
            float(t.ravel()[k]),
            f"a TPR above --at-fpr {float(f.ravel()[k]):g} (any mechanism lets a coin flip reach TPR = FPR)",
        )
    mu = special.ndtri(t) - special.ndtri(f)
    return finish(mu * (1 - _SAFE), scalar=scalar)
