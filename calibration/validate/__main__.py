from calibration.validate.command import main

raise SystemExit(main())
