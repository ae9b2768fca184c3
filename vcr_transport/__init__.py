"""vcr_transport: record what an LLM SDK sends and streams back at the httpx transport, replay it offline.

Importing this package patches nothing, reads no environment variable and opens no file.
"""

from ._context import use_cassette
from ._core._faults import Fault
from ._core._format import FORMAT_VERSION
from ._core._matching import NON_DETERMINISTIC_FIELD_NAMES, VOLATILE_HEADERS, find_first_difference
from ._core._modes import MODES
from ._core._options import Options
from ._core._redaction import PLACEHOLDER, SECRET_FIELD_NAMES, Redactor, remove_secret_values
from ._exceptions import (
    CassetteError,
    CassetteOwnerError,
    ModeError,
    NetworkBlockedError,
    RecordedError,
    RecordingNotSavedWarning,
    ReplayMismatch,
    UnplayedCallsError,
    UnplayedCallsWarning,
    VcrTransportError,
)
from ._recording import AsyncRecordingTransport, CassetteRecorder, RecordingTransport
from ._replay import ReplayTransport
from ._session import CassetteSession, ModeTransport, async_transport, transport

__version__ = "0.1.0"

__all__ = [
    "FORMAT_VERSION",
    "MODES",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "PLACEHOLDER",
    "SECRET_FIELD_NAMES",
    "VOLATILE_HEADERS",
    "AsyncRecordingTransport",
    "CassetteError",
    "CassetteOwnerError",
    "CassetteRecorder",
    "CassetteSession",
    "Fault",
    "ModeError",
    "ModeTransport",
    "NetworkBlockedError",
    "Options",
    "RecordedError",
    "RecordingNotSavedWarning",
    "RecordingTransport",
    "Redactor",
    "ReplayMismatch",
    "ReplayTransport",
    "UnplayedCallsError",
    "UnplayedCallsWarning",
    "VcrTransportError",
    "async_transport",
    "find_first_difference",
    "remove_secret_values",
    "transport",
    "use_cassette",
]

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = "vcr_transport"
del _name, _obj
