"""Calibration: the real checkpoint loader and token migration, measured on real machines.

Nothing here yet: the aligned checkpoint format, the pipelined O_DIRECT loader and
`python -m calibration.measure` (which writes the hardware profile that `sim` reads)
arrive with their own issues. Until then the simulator runs on the vendor figures in
`sim/defaults/cluster.toml`.
"""
