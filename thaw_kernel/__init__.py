"""What every thaw package shares and nothing else: the bad-input error family
(`errors`), the one-line-error command line (`cli`), atomic publishing (`publish`), units
(`units`), seed streams (`seeds`) and the storage tiers (`tiers`).

It imports nothing else of thaw, so `traces`, `policies`, `calibration` and `analysis`
may all import it without depending on the simulator.
"""
