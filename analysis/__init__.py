"""Analysis of run directories: statistics with confidence intervals, plots and reports.

Nothing here yet: the library, `python -m analysis report` and the notebooks arrive with
their own issue. A run directory is already plain data: `requests.parquet` and
`summary.json` load with pandas and json.
"""
