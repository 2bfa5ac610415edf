"""`generate`: the same text for the same seed, from the checkpoint alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from language_model.cli import main
from language_model.config import Config, load_config
from language_model.train import fit


@pytest.fixture
def checkpoint(tiny_config: Config) -> Path:
    fit(load_config(overrides=["train.max_steps=3"], base=tiny_config))
    return Path(tiny_config.train.out_dir) / "last.pt"


def generated(capsys: pytest.CaptureFixture[str], checkpoint: Path, *options: str) -> str:
    capsys.readouterr()
    args = ["generate", "--checkpoint", str(checkpoint), "ab", "--max-new-tokens", "24"]
    assert main([*args, *options]) == 0
    return capsys.readouterr().out


def test_generate_is_deterministic_per_seed(checkpoint: Path, capsys) -> None:
    first = generated(capsys, checkpoint, "--seed", "3")
    assert first.startswith("ab") and len(first) > len("ab") + 1
    assert generated(capsys, checkpoint, "--seed", "3") == first
    assert generated(capsys, checkpoint, "--seed", "4") != first
    greedy = generated(capsys, checkpoint, "--temperature", "0", "--seed", "5")
    assert generated(capsys, checkpoint, "--temperature", "0", "--seed", "6") == greedy
    assert generated(capsys, checkpoint, "--top-k", "1") == greedy  # top-1 is greedy


def test_generate_refuses_bad_options_in_one_line(checkpoint: Path, capsys) -> None:
    for option in (["--max-new-tokens", "0"], ["--temperature", "-1"], ["--top-k", "-2"]):
        capsys.readouterr()
        assert main(["generate", "--checkpoint", str(checkpoint), *option]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
