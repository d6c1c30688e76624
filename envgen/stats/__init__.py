"""Statistics for the replication's tables and claims: pure functions over run arrays.

Inputs are `{row: array(n_runs,)}` (or rliable's `(n_runs, n_tasks)`) with explicit
seeds; outputs are frozen dataclasses. See docs/stats.md for the verdict rule.
"""
