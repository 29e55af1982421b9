"""`python -m calibration.convert SRC DST`: see `calibration.checkpoint.convert`."""

from calibration.checkpoint.convert import main

if __name__ == "__main__":
    raise SystemExit(main())
