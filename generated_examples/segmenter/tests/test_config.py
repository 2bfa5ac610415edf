from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from segmenter.config import (
    Config,
    ConfigError,
    config_from_dict,
    defaults_toml,
    load_config,
    to_toml,
)

DEFAULT_TOML = Path(__file__).resolve().parents[1] / "configs" / "default.toml"


def test_default_toml_is_written_from_the_dataclasses() -> None:
    expected = defaults_toml(Config(), "segmenter")
    stale = "configs/default.toml is out of date: python -m segmenter defaults --write"
    assert DEFAULT_TOML.read_text(encoding="utf-8") == expected, stale
    assert load_config(DEFAULT_TOML) == Config()


def test_overrides_are_typed() -> None:
    config = load_config(overrides=["train.lr=0.5", "train.amp=true", "train.out_dir=/tmp/x"])
    assert config.train.lr == 0.5
    assert config.train.amp is True
    assert config.train.out_dir == "/tmp/x"


@pytest.mark.parametrize(
    "override",
    [
        "train.nope=1",
        "model.nope=1",
        "train.lr=fast",
        "train.lr=nan",
        "train.lr=0",
        "train.device=tpu",
        "train.log_every=0",
        "train.seed=99999999999999999999",
        "task=something-else",
        "lr",
    ],
)
def test_bad_overrides_are_refused(override: str) -> None:
    with pytest.raises(ConfigError):
        load_config(overrides=[override])


def test_unknown_keys_list_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="valid keys: .*model.name"):
        load_config(overrides=["model.nope=1"])


def test_resolved_config_round_trips_through_toml(tmp_path: Path) -> None:
    config = load_config(overrides=['train.out_dir=a "quoted" \\ path'])
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config), encoding="utf-8")
    written = tomllib.loads(path.read_text(encoding="utf-8"))
    assert written["train"]["out_dir"] == config.train.out_dir
    assert load_config(path) == config


def test_a_checkpoint_config_with_keys_this_project_lacks_still_loads() -> None:
    saved = Config().to_dict()
    saved["data"]["a_key_of_an_older_template"] = 1
    assert config_from_dict(saved) == Config()
    saved["task"] = "another-task"
    with pytest.raises(ConfigError, match="fixed by the template"):
        config_from_dict(saved)
