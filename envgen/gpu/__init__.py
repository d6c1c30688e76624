"""The driver of an offline GPU machine: `envgen gpu check|bench|probe|run|import`
(`cli`, with `check`, `probe`, `rate`, `chunk` and `archive`). It stands above the pipeline whose
runs it trains; how runs share a card and what a table costs in GPU-hours is the
pipeline's (`envgen.pipeline.gpu_plan`).
"""
