"""What the pytest plugin registers when it loads, before any cassette is used: the modes (``--vcr-mode``),
the ini settings of the run-wide options, and the keys ``[tool.vcr_transport]`` takes. Plain constants, so
that loading the plugin imports none of the machinery (issue 26: free when unused). Beside the plugin, not
in the engine layer, whose packages would be two more modules for pytest's assertion rewriter to load at
every start (about 0.5 ms each).

Generated from ``_modes.MODES``, the fields of ``Options`` and ``_compat`` by ``docs/_gen.py``
(``registration_module``): do not edit, run ``python docs/_gen.py``.
``tests/integration/test_registration.py`` checks that it is current.
"""

from __future__ import annotations

__all__ = [
    "COMPAT_FLAGS",
    "COMPAT_INI",
    "COMPAT_OWNERS",
    "COMPAT_VALUE",
    "ENVIRONMENT_VARIABLE",
    "INI_OPTIONS",
    "MODES",
    "PYPROJECT_NAMES",
]

MODES: tuple[str, ...] = ("off", "record", "replay", "record-on-miss", "auto", "check")
ENVIRONMENT_VARIABLE = "VCR_TRANSPORT_MODE"
COMPAT_INI = "vcr_transport_compat"
# The run-wide options that a pytest ini setting sets: (option, ini setting, its help, its pytest ini type
# (args: a list, added to the marker's), the values it takes as text when it takes only a few).
INI_OPTIONS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    (
        "caught_mismatch",
        "vcr_caught_mismatch",
        "the option caught_mismatch for every test: raise, ignore (default: raise; ignore in the "
        "pytest-recording compatibility mode)",
        "string",
        ("raise", "ignore"),
    ),
    (
        "unplayed",
        "vcr_unplayed",
        "the option unplayed for every test: error, warn, ignore, partial (default: error; ignore in the "
        "pytest-recording compatibility mode)",
        "string",
        ("error", "warn", "ignore", "partial"),
    ),
    (
        "max_age",
        "vcr_transport_max_age",
        "the option max_age for every test: days (a number > 0), None (default: None)",
        "string",
        (),
    ),
    (
        "on_expiry",
        "vcr_transport_on_expiry",
        "the option on_expiry for every test: warn, fail, record-on-miss (default: warn)",
        "string",
        ("warn", "fail", "record-on-miss"),
    ),
    (
        "block_network",
        "vcr_block_network",
        "the option block_network for every test: true, false, session (default: False (the plugin: True))",
        "string",
        ("true", "false", "session"),
    ),
    (
        "allowed_hosts",
        "vcr_allowed_hosts",
        "the option allowed_hosts for every test, added to the marker's: a list of host globs (db, "
        "*.internal, 10.0.0.*; :port for one port: localhost:5432), address networks (10.0.0.0/8), or re: "
        "and a regular expression",
        "args",
        (),
    ),
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
    "max_age",
    "on_expiry",
    "block_network",
    "allowed_hosts",
    "cassette_dir",
    "drift_hosts",
)
COMPAT_VALUE = "pytest-recording"
# The plugins that own pytest-recording's options and marker: (the project, its package, the name pytest
# loads it by). While one will load, the compatibility mode registers none of them.
COMPAT_OWNERS: tuple[tuple[str, str, str], ...] = (
    ("pytest-recording", "pytest_recording", "recording"),
    ("cassetter", "cassetter", "cassetter"),
)
# pytest-recording's options that the compatibility mode serves: (the flag, its dest, its argparse action,
# its choices, its help).
COMPAT_FLAGS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "--record-mode",
        "record_mode",
        "store",
        ("all", "new_episodes", "none", "once", "rewrite"),
        "with vcr_transport_compat = pytest-recording: pytest-recording's record mode, mapped to a vcr_transport mode",
    ),
    (
        "--block-network",
        "block_network",
        "store_true",
        (),
        "with vcr_transport_compat = pytest-recording: pytest-recording's: block network access beyond "
        "loopback for tests, except a vcr test's cassette while it records",
    ),
    (
        "--allowed-hosts",
        "allowed_hosts",
        "store",
        (),
        "with vcr_transport_compat = pytest-recording: pytest-recording's: regular expressions of hosts the "
        "network guard lets through, separated by commas",
    ),
    (
        "--disable-recording",
        "disable_recording",
        "store_true",
        (),
        "with vcr_transport_compat = pytest-recording: pytest-recording's: vcr tests run with no cassette "
        "(mode off) and reach the real network",
    ),
)
