"""The engine layer: what to do with a request. Comparable requests and field-path differences
(``_matching``, ``_index``), choosing the recorded call that answers (``_engine``), what a mismatch says
(``_explain``), the modes and their decision (``_modes``), injected faults (``_faults``), every option
(``_options`` and its generated ``_typed_options``), a call's recording
(``_call_recording``), WebSocket session playback (``_websocket``) and quiet re-records (``_quiet``).
Imports the format and rules layers only."""
