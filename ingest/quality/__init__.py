"""The data-quality gate: expectation suites as code (rules) and their great-expectations run (gate)."""
