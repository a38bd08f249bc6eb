"""The configuration reference (docs/configuration.md) and arena/config.py agree."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from helpers.paths import ROOT

from arena.config import Settings, load_settings

DOC = ROOT / "docs" / "configuration.md"
CODE = ROOT / "arena" / "config.py"


def documented() -> dict[str, str]:
    rows = re.findall(r"^\| `(TONK_[A-Z_]+)` \| ([^|]*) \|", DOC.read_text(), flags=re.M)
    return {name: default.strip() for name, default in rows}


def read_in_code() -> set[str]:
    return set(re.findall(r'"(TONK_[A-Z_]+)"', CODE.read_text()))


def test_every_variable_the_code_reads_is_documented_and_vice_versa() -> None:
    assert read_in_code() == set(documented())


def test_documented_defaults_match_the_code() -> None:
    home = "/home/someone"
    settings = load_settings({"HOME": home})
    for name, default in documented().items():
        field = name.removeprefix("TONK_").lower()
        if field == "queue":
            field = "queue_name"
        value = getattr(settings, field)
        if isinstance(value, tuple):
            value = ",".join(value)
        expected = "" if default == "(empty)" else default.strip("`")
        expected = expected.replace("$TONK_DATA_DIR", settings.data_dir).replace("~", home)
        assert str(value) == expected, name


def test_every_settings_field_has_a_variable() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)}
    names = {n.removeprefix("TONK_").lower() for n in documented()} | {"queue_name"}
    assert fields <= names


def test_a_bad_integer_is_refused_with_the_variable_named() -> None:
    with pytest.raises(ValueError, match="TONK_MAX_FAULTS"):
        load_settings({"TONK_MAX_FAULTS": "three"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TONK_LOG_RETENTION_DAYS": "-1"}, "RETENTION_DAYS must be an integer from 0 to 36500, got -1"),
        ({"TONK_LOG_RETENTION_DAYS": "30d"}, "TONK_LOG_RETENTION_DAYS must be an integer, got '30d'"),
        ({"TONK_LOG_RETENTION_MATCHES": "-5"}, "TONK_LOG_RETENTION_MATCHES must be an integer from 0"),
        ({"TONK_GC_GRACE_S": "60"}, "TONK_GC_GRACE_S must be an integer from 600 to 31536000, got 60"),
        ({"TONK_GC_GRACE_S": "900", "TONK_BUILD_TIME_LIMIT_S": "1200"}, "longer than a build and its check"),
    ],
)
def test_retention_settings_are_read_strictly(env: dict[str, str], message: str) -> None:
    """A retention setting out of its range is refused with its bounds, never clamped: a gc
    that quietly read -1 days as 0 would delete every log."""
    with pytest.raises(ValueError, match=re.escape(message)):
        load_settings(env)
    assert load_settings({"TONK_LOG_RETENTION_DAYS": "0", "TONK_GC_GRACE_S": "3600"}).log_retention_days == 0


def test_environment_overrides_defaults() -> None:
    settings = load_settings({"TONK_REDIS_URL": "redis://127.0.0.1:6379/3",
                              "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1, localhost"})
    assert settings.redis_url == "redis://127.0.0.1:6379/3"
    assert settings.allowed_bot_hosts == ("127.0.0.1", "localhost")


def test_the_default_store_is_in_the_users_data_folder_wherever_one_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was var/tonk-arena.sqlite under the current folder: `tonk owner create` run from a
    # bot's folder made a second, empty arena.
    env = {"HOME": "/home/someone"}
    urls = set()
    for folder in (tmp_path, tmp_path / "elsewhere"):
        folder.mkdir(exist_ok=True)
        monkeypatch.chdir(folder)
        urls.add(load_settings(env).database_url)
    assert urls == {"sqlite:////home/someone/.local/share/tonk-arena/tonk-arena.sqlite"}
    xdg = load_settings({**env, "XDG_DATA_HOME": "/data/someone"})
    assert xdg.database_url == "sqlite:////data/someone/tonk-arena/tonk-arena.sqlite"
    relative = load_settings({**env, "XDG_DATA_HOME": "relative"})
    assert relative.data_dir == "/home/someone/.local/share/tonk-arena"
    mine = load_settings({**env, "TONK_DATA_DIR": str(tmp_path / "arena")})
    assert mine.database_url == f"sqlite:///{tmp_path / 'arena' / 'tonk-arena.sqlite'}"
    url = "postgresql+psycopg://tonk@db:5432/tonk"
    assert load_settings({**env, "TONK_DATABASE_URL": url}).database_url == url


def test_tests_never_touch_the_users_data_folder() -> None:
    import os

    # conftest.py points TONK_DATA_DIR at a temporary folder for the whole session.
    assert load_settings().data_dir == os.environ["TONK_DATA_DIR"]
    assert not load_settings().data_dir.startswith(str(Path.home() / ".local"))
