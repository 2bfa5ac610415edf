"""Every rule, family by family: a module per code family (PGN1xx in pgn1_correctness, ...),
each ending with the explicit list of its rules (code, name, severity, summary, check, fix)."""

from __future__ import annotations

from ptgen.lint.model import Rule
from ptgen.lint.rules import (
    pgn0_files,
    pgn1_correctness,
    pgn2_device,
    pgn3_reproducibility,
    pgn4_checkpoints,
    pgn5_performance,
    pgn6_style,
    pgn7_api,
)

ALL: tuple[Rule, ...] = (
    *pgn0_files.RULES,  # file-level: syntax errors, files not read
    *pgn1_correctness.RULES,  # autograd, training and numerics mistakes
    *pgn2_device.RULES,  # device handling
    *pgn3_reproducibility.RULES,  # seeds, determinism, evaluation order
    *pgn4_checkpoints.RULES,  # saving and loading
    *pgn5_performance.RULES,  # input pipeline and host-device syncs
    *pgn6_style.RULES,  # opt-in style
    *pgn7_api.RULES,  # removed, deprecated and private APIs
)
