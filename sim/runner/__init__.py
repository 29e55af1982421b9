"""Running simulations: one run from Python (`api`, re-exported as `sim.api`), the command
line (`cli`, `python -m sim`), the progress bar, and sweeps over a grid (`sweep`)."""
