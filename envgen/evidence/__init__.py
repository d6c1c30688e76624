"""The evidence wing: what checks runs and the numbers reported from them, on top of the
house; nothing below imports it.

- `verify` (`envgen verify`, `make verify`): every committed number re-derived from the
  raw run logs, every sealed run against its folder's name and manifest, the LLM cache
  and its replay slots, each table against its plan (`verify_plan`), each not_recorded or
  llm_unusable row's reason against the cache (`row_labels`), the report, the
  figures the docs quote (`docfigures`, `doc_templates`, `doc_numbers`) and each
  registration's commit before its campaign's runs (`registration`);
- `derive`: the numbers a report shows, re-derived from one run's logs;
- `rerun` and `rerun_check` (`envgen rerun`): retrain a committed run's first updates on
  this machine and say where it splits from the committed logs.

What every layer needs of a run's identity (the run its folder names) is
`envgen.loop.identity`, beside `RunConfig` and the run paths.
"""
