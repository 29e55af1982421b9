"""A real replay of a trace on this machine, for `python -m calibration.validate`: a
scenario (`scenario`), instance processes (`instance`), the scheduler (`scheduler`) over
its books (`view`), what it measured (`records`) and the comparison (`compare`)."""
