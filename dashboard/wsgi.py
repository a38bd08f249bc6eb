"""The WSGI entry point for production: ``gunicorn dashboard.wsgi:app`` (settings from the
environment, docs/configuration.md)."""

from __future__ import annotations

from dashboard import create_app

app = create_app()
