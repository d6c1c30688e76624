"""Campaigns: one replication file trained across sessions and machines, run by run.

Modules, each importing only those before it: registry (which campaigns exist),
gitcommit (commit one run), store (the run store as a campaign sees it), process (one
campaign process at a time; stop), run (a session: start, run), status (status and
collect), handoff, cli (`envgen campaign ...`). docs/pipeline.md, "CPU campaign".
"""
