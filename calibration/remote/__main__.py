from calibration.remote.command import main

raise SystemExit(main())
