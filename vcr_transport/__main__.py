"""``python -m vcr_transport``: the vcr-transport command."""

from ._tools._cli import main

raise SystemExit(main())
