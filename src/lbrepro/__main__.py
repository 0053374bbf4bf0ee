"""``python -m lbrepro`` — the same as the ``lbrepro`` console command."""

from lbrepro.cli import main

raise SystemExit(main())
