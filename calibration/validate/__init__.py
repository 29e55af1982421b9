"""`python -m calibration.validate`: the simulator against a real replay on this machine.

`command` runs it: a scenario (`scenario`, scaled to this machine by `scale`), instance
processes (`instance`) on the machine's devices (`devices`), the scheduler (`scheduler`)
over its books (`view`), what it measured (`records`), the comparison with the simulator
(`compare`) stage by stage (`stages`), and its summary over repeats (`summary`).
"""
