"""Liveness probe (docker-compose, load balancers) and the benchmark's baseline route."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})
