"""The GPU side of the replication: the plan of how runs share a card and how many
GPU-hours a table takes (`plan`, which the pipeline's executor sizes its workers with),
and the driver of an offline GPU machine (`cli`: `envgen gpu check|bench|run|import`,
with `check`, `chunk` and `archive`).

This package file imports nothing: the plan sits below the pipeline and the driver
above it (tests/test_import_layers.py), so importing `envgen.gpu.plan` must not load
the driver.
"""
