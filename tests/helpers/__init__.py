"""Helpers shared by the test modules: bots that misbehave, seeded stores, positions from card
text, services started for a test. No test lives here, and no test module imports another:
what two of them share is here (fixtures are in tests/conftest.py)."""
