"""Statistics shared by the cluster benchmark's Ray and wray sides."""


def pct(xs, p):
    """The p-th percentile of xs (0 to 100), linearly interpolated between
    the two nearest ranks (numpy's default, "linear")."""
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
