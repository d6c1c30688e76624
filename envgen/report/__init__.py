"""Tables, figures and the claims report from the pipeline's runs.json files.

Each module is a pipeline stage: `python -m envgen.report.<tables|figures|claims>` with
every input and output path on its command line (docs/report.md).
"""
