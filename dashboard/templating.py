"""Jinja filters for numbers as the pages show them."""

from __future__ import annotations

import datetime as dt

from flask import Flask

from arena.rating_terms import legend

DASH = "\u2013"  # shown for "no value"
MINUS = "\u2212"  # a real minus sign lines up with "+" in tables


def signed(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return DASH
    text = f"{abs(value):,.{digits}f}"
    if round(value, digits) == 0:
        return text
    return ("+" if value > 0 else MINUS) + text


def pct(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{100 * value:.{digits}f}%"


def num(value: float | int | None, digits: int = 0) -> str:
    return DASH if value is None else f"{value:,.{digits}f}"


def ms(value: float | None) -> str:
    """A decision time: enough digits to tell fast bots apart."""
    if value is None:
        return DASH
    return f"{value:.2f} ms" if value < 10 else f"{value:,.0f} ms"


def when(value: str | None) -> str:
    if not value:
        return DASH
    try:
        return dt.datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return value


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(signed=signed, pct=pct, num=num, when=when, ms=ms)
    # What the rating numbers mean, worded once (arena/rating_terms.py) for every page.
    app.jinja_env.globals["rating_legend"] = legend()
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
