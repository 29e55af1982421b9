"""Sweeps: a grid of runs (`grid`), each run in its own directory (`run`), executed
locally or on Ray (`backends`), resumed and tabulated by `driver`."""

from sim.runner.sweep.driver import SWEEP_FILE, run_sweep

__all__ = ["SWEEP_FILE", "run_sweep"]
