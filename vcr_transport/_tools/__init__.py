"""The cassette toolset: the ``vcr-transport`` command (``_cli``) and what it runs: managing cassettes
(``_manage``), the terminal (``_term``), ``show`` and its textconv (``_render``), the HTML page (``_html``),
HAR (``_har``), ``diff`` (``_diff``), ``drift`` with its vendor hosts (``_drift``, ``_vendors``), the vcrpy
import (``_vcrpy``), ``serve`` (``_serve``) and the shell completions (``completions/``).

The runtime (record, replay, the pytest plugin) never imports this package
(``tests/package/test_architecture.py``); the tools use the runtime and the core.
"""
