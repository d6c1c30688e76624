"""The evidence wing: what checks runs and the numbers reported from them, on top of the
house; nothing below imports it.

- `verify` (`envgen verify`): every committed number re-derived from the raw run logs,
  every sealed run against its folder and manifest, the LLM cache, each table against
  its plan and its row labels against the LLM cache (`verify_plan`), the report, the
  docs' figures (`docfigures`, `doc_templates`, `doc_numbers`), the git history
  (`history`); the checks themselves are in `checks`;
- `derive`: the numbers a report shows, re-derived from one run's logs;
- `rerun` and `rerun_check` (`envgen rerun`): retrain a committed run's first updates
  here and say where it splits from the committed logs.
"""
