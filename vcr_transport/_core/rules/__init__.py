"""The rules layer: what is a secret and what the network guard lets through. Redaction (``_redaction``, the
credential catalogue ``_credentials`` with its generated ``_gitleaks_rules`` and ``_prefix_table``, streamed
bodies ``_stream_redaction``, finding secrets in files ``_scan``) and the guard's host decision (``_hosts``).
Imports the format layer only."""
