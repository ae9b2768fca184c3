"""What the pytest plugin registers when it loads, before any cassette is used: the modes (``--vcr-mode``),
the ini settings of the run-wide options, and the keys ``[tool.vcr_transport]`` takes. Plain constants, so
that loading the plugin imports none of the machinery (issue 26: free when unused).

Generated from ``_modes.MODES`` and the fields of ``Options`` (``_options.registration_module``): do not
edit, run ``python docs/_gen.py``. ``tests/core/test_registration.py`` checks that it is current.
"""

from __future__ import annotations

__all__ = [
    "COMPAT_INI",
    "ENVIRONMENT_VARIABLE",
    "INI_OPTIONS",
    "MODES",
    "PYPROJECT_NAMES",
]

MODES: tuple[str, ...] = ("off", "record", "replay", "record-on-miss", "auto")
ENVIRONMENT_VARIABLE = "VCR_TRANSPORT_MODE"
COMPAT_INI = "vcr_transport_compat"
# The run-wide options that a pytest ini setting sets: (option, ini setting, choices, default, the
# pytest-recording compatibility mode's default or '').
INI_OPTIONS: tuple[tuple[str, str, tuple[str, ...], str, str], ...] = (
    ("caught_mismatch", "vcr_caught_mismatch", ("raise", "ignore"), "raise", "ignore"),
    ("unplayed", "vcr_unplayed", ("error", "warn", "ignore", "partial"), "error", "ignore"),
)
PYPROJECT_NAMES: tuple[str, ...] = (
    "caught_mismatch",
    "match_on",
    "ignore_headers",
    "compare_headers",
    "ignore_fields",
    "normalize_patterns",
    "passthrough",
    "ignore_hosts",
    "passthrough_replay",
    "parse_cache",
    "redact_names",
    "redact_patterns",
    "mode",
    "cassette_dir",
)
