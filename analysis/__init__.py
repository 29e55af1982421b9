"""Analysis of results: load run directories and sweeps into DataFrames, statistics with
bootstrap confidence intervals over seeds, plots, and `python -m analysis report`.

Reads result files only (plus `sim.schema` for their schema), so it works on runs
copied from anywhere.
"""

from analysis.runs import AnalysisInputError, Runs, read_runs
from analysis.stats import bootstrap_ci, cost, over_seeds, slo_attainment

__all__ = [
    "AnalysisInputError",
    "Runs",
    "bootstrap_ci",
    "cost",
    "over_seeds",
    "read_runs",
    "slo_attainment",
]
