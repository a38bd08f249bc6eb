"""The configuration reference (docs/configuration.md) and arena/config.py agree."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from arena.config import Settings, load_settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
CODE = Path(__file__).resolve().parents[1] / "arena" / "config.py"


def documented() -> dict[str, str]:
    rows = re.findall(r"^\| `(TONK_[A-Z_]+)` \| ([^|]*) \|", DOC.read_text(), flags=re.M)
    return {name: default.strip() for name, default in rows}


def read_in_code() -> set[str]:
    return set(re.findall(r'"(TONK_[A-Z_]+)"', CODE.read_text()))


def test_every_variable_the_code_reads_is_documented_and_vice_versa() -> None:
    assert read_in_code() == set(documented())


def test_documented_defaults_match_the_code() -> None:
    settings = load_settings({})
    for name, default in documented().items():
        field = name.removeprefix("TONK_").lower()
        if field == "queue":
            field = "queue_name"
        value = getattr(settings, field)
        if isinstance(value, tuple):
            value = ",".join(value)
        expected = "" if default == "(empty)" else default.strip("`")
        assert str(value) == expected, name


def test_every_settings_field_has_a_variable() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)}
    names = {n.removeprefix("TONK_").lower() for n in documented()} | {"queue_name"}
    assert fields <= names


def test_a_bad_integer_is_refused_with_the_variable_named() -> None:
    with pytest.raises(ValueError, match="TONK_MAX_FAULTS"):
        load_settings({"TONK_MAX_FAULTS": "three"})


def test_environment_overrides_defaults() -> None:
    settings = load_settings({"TONK_REDIS_URL": "redis://127.0.0.1:6379/3",
                              "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1, localhost"})
    assert settings.redis_url == "redis://127.0.0.1:6379/3"
    assert settings.allowed_bot_hosts == ("127.0.0.1", "localhost")
