"""The views layer: a recorded call as a reader sees it. The one call model (``_view``), a call read as a
conversation (``_conversation``), what a reviewer is spared (``_review``), an answer's shape (``_shape``) and
live calls paired with recorded ones (``_pairing``). Shared by the runtime's check mode and the tools; imports
the layers below it only."""
