"""A finished run's results: the summary computed from the simulation (`summary`) and the
run directory they are published in, atomically (`run_dir`). The file contract they
follow, which `analysis` reads, is `sim.schema`."""
