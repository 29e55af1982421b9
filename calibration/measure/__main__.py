from calibration.measure.command import main

raise SystemExit(main())
