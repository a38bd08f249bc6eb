"""Where the rules text, our rulings and the example records live: the ``shared`` folder
beside the repository (CI copies it there), or wherever ``TONK_SHARED_DIR`` points."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("TONK_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
SPEC = SHARED / "spec"
CASES = SHARED / "cases"
