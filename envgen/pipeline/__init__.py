"""The replication pipeline: profiles, table plans, parallel execution, `runs.json` files."""
