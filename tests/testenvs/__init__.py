"""PettingZoo environments written for the tests (loaded by module path, e.g. testenvs.masked)."""
