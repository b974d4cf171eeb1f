from pubench.cli import main

raise SystemExit(main())
