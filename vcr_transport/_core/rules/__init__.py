"""The rules layer: what is a secret and what the network guard lets through. The redactor (``_redaction``)
runs the text rules (``_rules``) whose probes one search finds (``_search``), over the secret names
(``_names``), the credential catalogue (``_catalogue``, with its generated ``_gitleaks_rules`` and
``_prefix_table``) and the values learned (``_known``); streamed bodies (``_stream``); finding secrets in files
(``_scan``); the guard's host decision (``_hosts``). Imports the format layer only."""
