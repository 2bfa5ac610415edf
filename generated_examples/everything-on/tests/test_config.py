from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from everything_on.config import Config, ConfigError, load_config, to_toml

DEFAULT_TOML = Path(__file__).resolve().parents[1] / "configs" / "default.toml"


def test_default_toml_matches_the_dataclass_defaults() -> None:
    assert load_config(DEFAULT_TOML) == Config()


def test_overrides_are_typed() -> None:
    config = load_config(overrides=["train.lr=0.5", "train.amp=true", "data.root=/data/x"])
    assert config.train.lr == 0.5
    assert config.train.amp is True
    assert config.data.root == "/data/x"


@pytest.mark.parametrize(
    "override", ["train.nope=1", "train.lr=fast", "train.lr=nan", "train.device=tpu", "lr"]
)
def test_bad_overrides_are_refused(override: str) -> None:
    with pytest.raises(ConfigError):
        load_config(overrides=[override])


def test_resolved_config_round_trips_through_toml(tmp_path: Path) -> None:
    config = load_config(overrides=['data.root=a "quoted" \\ path'])
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config), encoding="utf-8")
    assert tomllib.loads(path.read_text(encoding="utf-8"))["data"]["root"] == config.data.root
    assert load_config(path) == config
