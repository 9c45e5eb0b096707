"""Binomial tail tests answered by cheap bounds, with scipy only when a bound cannot tell.

The detectors ask ``binom.sf(k - 1, n, p) > alpha`` — is seeing ``k`` or more of ``n`` at rate
``p`` likelier than ``alpha``? — every hour on every path. The answer is usually far from the
line: the Chernoff bound ``P(X >= k) <= exp(-n·D(k/n || p))`` shows it is much smaller than
``alpha``, or the single term ``P(X = k) <= P(X >= k)`` shows it is much larger. Only when both
bounds land within a factor ``e ** MARGIN`` (~1000) of ``alpha`` is scipy asked, so the answer is
always the one ``scipy.stats.binom.sf`` gives (its error is many orders of magnitude below
that factor).

>>> tail_exceeds(30, 1000, 0.001, 1e-6), tail_exceeds(1, 1000, 0.001, 1e-6)
(False, True)
>>> from scipy.stats import binom
>>> bool(binom.sf(29, 1000, 0.001) > 1e-6), bool(binom.sf(0, 1000, 0.001) > 1e-6)
(False, True)
"""

from __future__ import annotations

import math
from functools import lru_cache

# Log-space distance from log(alpha) a bound must keep before it decides alone.
MARGIN = 7.0


def tail_exceeds(k: int, n: int, p: float, alpha: float) -> bool:
    """``scipy.stats.binom.sf(k - 1, n, p) > alpha``: whether P(X >= k) for X ~ Bin(n, p) exceeds ``alpha``."""
    if (type(k) is int and type(n) is int and 1 <= k <= n and 0.0 < p < 1.0 and 0.0 < alpha < 1.0):
        log_alpha = math.log(alpha)
        a = k / n
        if a > p:
            # Chernoff: log P(X >= k) <= -n·D(a || p); the second term vanishes at a = 1.
            divergence = a * math.log(a / p)
            if a < 1.0:
                divergence += (1.0 - a) * (math.log1p(-a) - math.log1p(-p))
            if -n * divergence < log_alpha - MARGIN:
                return False
        log_term = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * math.log(p) + (n - k) * math.log1p(-p))
        if log_term > log_alpha + MARGIN:
            return True
    return _scipy_tail(k, n, p) > alpha


def _scipy_tail(k, n, p) -> float:
    from scipy.stats import binom

    return binom.sf(k - 1, n, p)


@lru_cache(maxsize=4096)   # the loss detector asks again about the same hours every hour
def poisson_tail_below(k: int, mean: float, alpha: float) -> bool:
    """``scipy.stats.poisson.sf(k - 1, mean) < alpha``: whether P(X >= k) for X ~ Poisson(mean) is below ``alpha``.

    Decided by the Chernoff bound ``log P(X >= k) <= k - mean - k·log(k / mean)`` (k > mean) or
    the single term ``P(X = k)`` when either is far from the line, by scipy otherwise.

    >>> poisson_tail_below(400, 3.6, 1e-6), poisson_tail_below(6, 3.6, 1e-6)
    (True, False)
    """
    if type(k) is int and k >= 1 and mean > 0.0 and 0.0 < alpha < 1.0:
        log_alpha = math.log(alpha)
        if k > mean and k - mean - k * math.log(k / mean) < log_alpha - MARGIN:
            return True
        if -mean + k * math.log(mean) - math.lgamma(k + 1) > log_alpha + MARGIN:
            return False
    from scipy.stats import poisson

    return bool(poisson.sf(k - 1, mean) < alpha)
