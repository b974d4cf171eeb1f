"""Class priors computed from counts (no torch: the spec loader uses them)."""


def exact_prior(n_pos: int, n_neg: int, n_labeled: int) -> float:
    """001 A.1.1: pi* = (P* - n_P) / (P* + N* - n_P), the positive fraction of the unlabeled
    rows of a single-training-set PU split."""
    return (n_pos - n_labeled) / (n_pos + n_neg - n_labeled)
