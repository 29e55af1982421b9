"""`python -m calibration.validate`: the simulator against a real replay on this machine.

`command` runs it: a scenario (`scenario`, scaled to this machine by `scale`), instance
processes (`instance`), the scheduler (`scheduler`) over its books (`view`), what it
measured (`records`), and the comparison with the simulator (`compare`).
"""
