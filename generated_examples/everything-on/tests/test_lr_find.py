"""lr-find (the lr-find feature): the suggestion rule on curves whose answer is known."""

from __future__ import annotations

import math

from everything_on.lr_find import smooth, suggest


def test_the_suggestion_is_the_steepest_descent_before_the_minimum() -> None:
    lrs = [10 ** (-6 + 6 * i / 99) for i in range(100)]  # 1e-6 .. 1
    # falls fastest at 1e-3 (a logistic step in log10(lr)), then diverges past 1e-1
    losses = [
        2 - 1 / (1 + math.exp(-4 * (math.log10(lr) + 3))) + max(0.0, 50 * (lr - 0.1)) for lr in lrs
    ]
    best = suggest(lrs, smooth(losses))
    assert best is not None and 10**-3.2 < best < 10**-2.8


def test_no_suggestion_when_the_loss_never_falls() -> None:
    lrs = [10 ** (-6 + i / 10) for i in range(50)]
    assert suggest(lrs, smooth([1.0 + 0.01 * i for i in range(50)])) is None
