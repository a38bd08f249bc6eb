"""Jinja filters for numbers as the pages show them, and the rule that every text a page
prints shows its invisible and direction-changing characters as visible escapes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Flask, request, url_for
from markupsafe import Markup

from arena.ratings.terms import legend
from arena.text import visible
from dashboard.params import results_arg

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
    """A decision's charged time: enough digits to tell fast bots apart. Under 0.005 ms it
    reads "< 0.01 ms", not "0.00 ms", which looked like a time never measured."""
    if value is None:
        return DASH
    if value < 0.005:
        return "< 0.01 ms"
    return f"{value:.2f} ms" if value < 10 else f"{value:,.0f} ms"


def when(value: str | None) -> str:
    if not value:
        return DASH
    try:
        return dt.datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return value


def shown(value: Any) -> Any:
    """Every ``{{ expression }}`` of every template passes through here (Jinja's finalize):
    plain text, which may come from a bot or a user, gets its invisible characters escaped
    (arena.text.visible: a right-to-left override or a zero-width space cannot disguise a
    name); markup the app built itself (charts, macros) is left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def results_shown() -> bool:
    """Whether this page was asked to show match scores (``?results=1``; a bad value is a 400)."""
    return results_arg(request.args)


def results_url(show: bool) -> str:
    """This page's address with its scores shown or hidden, its other parameters kept."""
    args: dict[str, Any] = {k: v for k, v in request.args.items() if k != "results"}
    if show:
        args["results"] = "1"
    args.update(request.view_args or {})
    return url_for(request.endpoint or "leaderboard.index", **args)


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(signed=signed, pct=pct, num=num, when=when, ms=ms, visible=visible)
    app.jinja_env.finalize = shown
    # What the rating numbers mean, worded once (arena/ratings/terms.py) for every page.
    app.jinja_env.globals["rating_legend"] = legend()
    app.jinja_env.globals.update(results_shown=results_shown, results_url=results_url)
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
