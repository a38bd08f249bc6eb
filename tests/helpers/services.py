"""The local services the tests talk to (tests/conftest.py makes each test's own database and
key prefix on them). Here, not in conftest.py, so that a test module can import them: with a
conftest.py in tests/arena/link too, ``import conftest`` names whichever was loaded last."""

from __future__ import annotations

import os

PG_ADMIN_URL = os.environ.get("TONK_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_TEST_URL = os.environ.get("TONK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
