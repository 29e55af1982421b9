"""`python -m calibration.verify DIR`: see `calibration.checkpoint.verify`."""

from calibration.checkpoint.verify import main

if __name__ == "__main__":
    raise SystemExit(main())
