"""The marker of tests that run bots in the bubblewrap sandbox: skipped where bubblewrap is
missing, except in CI, where scripts/services.sh installs it and a missing one is a failure."""

from __future__ import annotations

import os
import shutil

import pytest

requires_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (scripts/services.sh installs it as root)",
)
