"""`python -m tnlib` is the same as the `tnlib` console script."""
from tnlib.cli import main

raise SystemExit(main())
