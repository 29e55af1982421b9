"""`python -m calibration.measure`: the probes that measure a machine and the profile
derived from them.

`command` runs them in order: the storage (`storage_probe`, over `raw_read`,
`synthetic` checkpoints and `touch`; `disk_readers`, processes loading at once),
host-to-device copies (`copy_probe`), an instance's start-up (`startup_probe`), decode
and prefill (`inference_probe`), token migration (`migration_probe`), and with
`--remote-rate` downloads through the remote store (`remote_probe`). Each records
`measurement`s; `derivation` fits the simulator's cost models to them (`linear_fit`),
`plausibility` refuses figures that cannot all be true, and `machine_description` says
what was measured, with `settings` for each device.
"""
