"""vcr_transport: record what an LLM SDK sends and streams back at the httpx transport, replay it offline.

Importing this package patches nothing, reads no environment variable and opens no file; it imports the
modules behind each name when the name is first used.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from ._context import use_cassette
    from ._core.engine._faults import Fault
    from ._core.engine._matching import NON_DETERMINISTIC_FIELD_NAMES, VOLATILE_HEADERS, find_first_difference
    from ._core.engine._modes import MODES, Mode
    from ._core.engine._options import Options
    from ._core.engine._typed_options import BlockOptions, RecordingOptions, ReplayOptions, TransportOptions
    from ._core.format._format import FORMAT_VERSION
    from ._core.rules._redaction import PLACEHOLDER, SECRET_FIELD_NAMES, Redactor, remove_secret_values
    from ._exceptions import (
        CassetteError,
        CassetteExpiredWarning,
        CassetteOwnerError,
        ModeError,
        NetworkBlockedError,
        RecordedError,
        RecordingNotSavedWarning,
        ReplayMismatch,
        ShapeDriftError,
        ShapeDriftWarning,
        UnplayedCallsError,
        UnplayedCallsWarning,
        VcrTransportError,
    )
    from ._recording import AsyncRecordingTransport, CassetteRecorder, RecordingTransport
    from ._session import CassetteSession, ModeTransport, ReplayTransport, async_transport, transport
    from ._version import __version__ as __version__

# Every name is imported when first used (PEP 562), so that importing the package stays cheap: name -> module.
_LAZY = {
    "CassetteError": "._exceptions",
    "CassetteExpiredWarning": "._exceptions",
    "CassetteOwnerError": "._exceptions",
    "ModeError": "._exceptions",
    "NetworkBlockedError": "._exceptions",
    "RecordedError": "._exceptions",
    "RecordingNotSavedWarning": "._exceptions",
    "ReplayMismatch": "._exceptions",
    "ShapeDriftError": "._exceptions",
    "ShapeDriftWarning": "._exceptions",
    "UnplayedCallsError": "._exceptions",
    "UnplayedCallsWarning": "._exceptions",
    "VcrTransportError": "._exceptions",
    "__version__": "._version",  # a leaf the build reads too; imported when asked for
    "use_cassette": "._context",
    "Fault": "._core.engine._faults",
    "FORMAT_VERSION": "._core.format._format",
    "NON_DETERMINISTIC_FIELD_NAMES": "._core.engine._matching",
    "VOLATILE_HEADERS": "._core.engine._matching",
    "find_first_difference": "._core.engine._matching",
    "MODES": "._core.engine._modes",
    "Mode": "._core.engine._modes",
    "Options": "._core.engine._options",
    "PLACEHOLDER": "._core.rules._redaction",
    "SECRET_FIELD_NAMES": "._core.rules._redaction",
    "Redactor": "._core.rules._redaction",
    "remove_secret_values": "._core.rules._redaction",
    "BlockOptions": "._core.engine._typed_options",
    "RecordingOptions": "._core.engine._typed_options",
    "ReplayOptions": "._core.engine._typed_options",
    "TransportOptions": "._core.engine._typed_options",
    "AsyncRecordingTransport": "._recording",
    "CassetteRecorder": "._recording",
    "RecordingTransport": "._recording",
    "ReplayTransport": "._session",
    "CassetteSession": "._session",
    "ModeTransport": "._session",
    "async_transport": "._session",
    "transport": "._session",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vcr_transport' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    if isinstance(value, type):
        value.__module__ = "vcr_transport"
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "FORMAT_VERSION",
    "MODES",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "PLACEHOLDER",
    "SECRET_FIELD_NAMES",
    "VOLATILE_HEADERS",
    "AsyncRecordingTransport",
    "BlockOptions",
    "CassetteError",
    "CassetteExpiredWarning",
    "CassetteOwnerError",
    "CassetteRecorder",
    "CassetteSession",
    "Fault",
    "Mode",
    "ModeError",
    "ModeTransport",
    "NetworkBlockedError",
    "Options",
    "RecordedError",
    "RecordingNotSavedWarning",
    "RecordingOptions",
    "RecordingTransport",
    "Redactor",
    "ReplayMismatch",
    "ReplayOptions",
    "ReplayTransport",
    "ShapeDriftError",
    "ShapeDriftWarning",
    "TransportOptions",
    "UnplayedCallsError",
    "UnplayedCallsWarning",
    "VcrTransportError",
    "async_transport",
    "find_first_difference",
    "remove_secret_values",
    "transport",
    "use_cassette",
]
