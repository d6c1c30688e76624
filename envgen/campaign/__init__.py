"""Campaigns: one replication file trained across sessions and machines, run by run
(docs/pipeline.md, "CPU campaign")."""
