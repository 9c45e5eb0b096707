"""Binomial tail tests answered by cheap bounds, with scipy only when a bound cannot tell.

The detectors ask ``binom.sf(k - 1, n, p) > alpha`` — is seeing ``k`` or more of ``n`` at rate
``p`` likelier than ``alpha``? — every hour on every path. The answer is usually far from the
line: the Chernoff bound ``P(X >= k) <= exp(-n·D(k/n || p))`` shows it is much smaller than
``alpha``, or the single term ``P(X = k) <= P(X >= k)`` shows it is much larger. Only when both
bounds land within a factor ``e ** MARGIN`` (~1000) of ``alpha`` is scipy asked, so the answer is
always the one ``scipy.stats.binom.sf`` gives (its error is many orders of magnitude below
that factor) — for valid arguments by the function ``binom.sf`` itself evaluates, called directly.

>>> tail_exceeds(30, 1000, 0.001, 1e-6), tail_exceeds(1, 1000, 0.001, 1e-6)
(False, True)
>>> from scipy.stats import binom
>>> bool(binom.sf(29, 1000, 0.001) > 1e-6), bool(binom.sf(0, 1000, 0.001) > 1e-6)
(False, True)
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

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
        return _binomial_sf()(float(k - 1), float(n), p) > alpha   # (near the line: what binom.sf evaluates)
    return _scipy_tail(k, n, p) > alpha


def _scipy_tail(k, n, p) -> float:
    from scipy.stats import binom

    return binom.sf(k - 1, n, p)


@lru_cache(maxsize=1)
def _binomial_sf():
    """The ufunc ``scipy.stats.binom.sf`` evaluates for a count 0 <= k < n and 0 < p < 1 (its own
    ``_sf``: boost's binomial survival function, at floats), without the distribution's ~0.1 ms of
    argument checks. The scipy pinned in pyproject.toml has it; one without it is an ImportError."""
    from scipy.special._ufuncs import _binom_sf

    return _binom_sf


@lru_cache(maxsize=4096)   # the loss detector asks again about the same hours every hour
def poisson_tail_below(k: int, mean: float, alpha: float) -> bool:
    """``scipy.stats.poisson.sf(k - 1, mean) < alpha``: whether P(X >= k) for X ~ Poisson(mean) is below ``alpha``.

    Decided by the Chernoff bound ``log P(X >= k) <= k - mean - k·log(k / mean)`` (k > mean) or
    the single term ``P(X = k)`` when either is far from the line, by scipy otherwise: near the
    line, for a valid count and a finite mean, by the function ``poisson.sf`` evaluates there
    (``scipy.special.pdtrc`` at ``k - 1``, without the distribution's ~0.1 ms of argument handling).

    >>> poisson_tail_below(400, 3.6, 1e-6), poisson_tail_below(6, 3.6, 1e-6), poisson_tail_below(16, 3.6, 1e-6)
    (True, False, False)
    """
    if type(k) is int and k >= 1 and mean > 0.0 and 0.0 < alpha < 1.0:
        log_alpha = math.log(alpha)
        if k > mean and k - mean - k * math.log(k / mean) < log_alpha - MARGIN:
            return True
        if -mean + k * math.log(mean) - math.lgamma(k + 1) > log_alpha + MARGIN:
            return False
        if mean < math.inf:
            from scipy.special import pdtrc

            return bool(pdtrc(float(k - 1), mean) < alpha)
    from scipy.stats import poisson

    return bool(poisson.sf(k - 1, mean) < alpha)


def mannwhitney_pvalue(x, y, alternative: str, alpha: float) -> float:
    """``scipy.stats.mannwhitneyu(x, y, alternative=alternative).pvalue``, or, where that is far
    from ``alpha``, a value computed here on the same side of ``alpha``.

    scipy's own test costs ~0.4 ms a call, mostly in argument handling. For one-sided tests on
    finite values the statistic is the same exact sum of average ranks. Where scipy answers
    asymptotically (more than 8 values each, or ties), z and the p-value computed here differ
    from scipy's in the last digits at most: one beyond a factor ``MWU_FACTOR`` of ``alpha`` is
    returned. Where scipy counts the exact distribution, a bound (:func:`_mwu_exact_bound`) below
    ``alpha / MWU_FACTOR`` is, else the exact tail counted here (:func:`_mwu_exact_tail`, the
    same distribution in exact integers) beyond that factor. Anything else is scipy's answer.

    >>> a, b = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], [11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0]
    >>> from scipy.stats import mannwhitneyu
    >>> mannwhitney_pvalue(a, b, "less", 1e-3) <= 1e-3, bool(mannwhitneyu(a, b, alternative="less").pvalue <= 1e-3)
    (True, True)
    """
    found = _mwu_statistic(np.asarray(x, dtype=float), np.asarray(y, dtype=float), alternative)
    if found is not None:
        if found[-1]:
            bound = _mwu_exact_bound(*found[:3])
            if bound < alpha / MWU_FACTOR:
                return bound
            p = _mwu_exact_tail(*found[:3])
            if p is not None and not alpha / MWU_FACTOR <= p <= alpha * MWU_FACTOR:
                return p
        else:
            p = _mwu_normal(*found[:4])
            if p == p and not alpha / MWU_FACTOR <= p <= alpha * MWU_FACTOR:
                return p
    from scipy.stats import mannwhitneyu

    return mannwhitneyu(x, y, alternative=alternative).pvalue


# How far (a factor) from alpha a p-value computed here must be to be answered without scipy.
MWU_FACTOR = 2.0


def _mwu_statistic(x: np.ndarray, y: np.ndarray, alternative: str) -> tuple | None:
    """(U of the one-sided test as scipy takes it, n1, n2, tie term, whether scipy counts the
    exact distribution); None for anything but one-sided tests on finite values."""
    n1, n2 = len(x), len(y)
    if alternative not in ("less", "greater") or n1 < 1 or n2 < 1 or x.ndim != 1 or y.ndim != 1:
        return None
    xy = np.concatenate((x, y))
    if not np.isfinite(xy).all():
        return None
    n = n1 + n2
    order = np.argsort(xy, kind="stable")
    ordered = xy[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)                           # each group of equal values: its first index
    counts = np.diff(np.append(starts, n))
    ranks = np.empty(n)
    ranks[order] = (starts + (counts + 1) / 2)[np.cumsum(first) - 1]   # average ranks, from 1
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2        # (sums of half-integers: exact)
    u = u1 if alternative == "greater" else n1 * n2 - u1
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
    exact = not (n1 > 8 and n2 > 8) and len(starts) == n     # (scipy's choice: small and no ties)
    return u, n1, n2, tie_term, exact


def _mwu_normal(u: float, n1: int, n2: int, tie_term: float) -> float:
    """scipy's asymptotic one-sided p-value of ``u`` (tie and continuity corrections)."""
    n = n1 + n2
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    if not s > 0:
        return math.nan                                      # (all values equal: left to scipy)
    z = (u - n1 * n2 / 2 - 0.5) / s
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _mwu_exact_bound(u: float, n1: int, n2: int) -> float:
    """No lower than the exact P(U >= u): the arrangements with U >= u, as many as partitions of
    k = n1·n2 − u into at most m = min(n1, n2) parts no larger than the other size, are no more
    than the m-part compositions of every j <= k, C(k + m, m), of the C(n1 + n2, m) arrangements.

    >>> _mwu_exact_bound(12.0, 3, 4), 1 / 35    # (k = 0: only the one arrangement)
    (0.02857142857142857, 0.02857142857142857)
    """
    k, m = n1 * n2 - int(u), min(n1, n2)
    return math.comb(k + m, m) / math.comb(n1 + n2, m)


def _mwu_exact_tail(u: float, n1: int, n2: int) -> float | None:
    """The exact P(U >= u) with no ties: of the C(n1 + n2, m) arrangements (m = min(n1, n2)), those
    with U <= k = n1·n2 − u (the distribution is symmetric), counted in exact integers as the
    coefficients up to q^k of the Gaussian binomial [n1 + n2 choose m]_q, the product over i = 1..m
    of (1 − q^(n1 + n2 − m + i)) / (1 − q^i). None when the counts could outgrow int64.

    >>> _mwu_exact_tail(12.0, 3, 4), 1 / 35, _mwu_exact_tail(0.0, 3, 4)
    (0.02857142857142857, 0.02857142857142857, 1.0)
    """
    m, other = min(n1, n2), max(n1, n2)
    total = math.comb(n1 + n2, m)
    if u != int(u) or total >= 2 ** 62:
        return None
    k = n1 * n2 - int(u)
    if k < 0:
        return 0.0
    counts = np.zeros(k + 1, dtype=np.int64)
    counts[0] = 1
    for i in range(1, m + 1):
        shift = other + i                    # times (1 − q^shift), up to q^k
        if shift <= k:
            counts[shift:] -= counts[: k + 1 - shift].copy()
        pad = -(k + 1) % i                   # over (1 − q^i): running sums along each residue of i
        counts = np.concatenate((counts, np.zeros(pad, dtype=np.int64))).reshape(-1, i).cumsum(axis=0).ravel()[: k + 1]
    return int(counts.sum()) / total

