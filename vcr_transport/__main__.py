"""``python -m vcr_transport``: the vcr-transport command."""

from ._cli import main

raise SystemExit(main())
