"""The sans-I/O core: what a cassette is and what to do with a request, with no socket, no file, no
``async def`` and no import of httpx or httpx2 (``tests/package/test_architecture.py`` holds that rule). The
transports, the context manager, the pytest plugin and the CLI are thin shells around it.

| module                | owns                                                                          |
|-----------------------|-------------------------------------------------------------------------------|
| ``_format``           | the cassette format: its schema (msgspec structs), line encoders, the parser, |
|                       | ``problems()`` (what ``verify`` reports). A format change touches this only.  |
| ``_modes``            | the modes and the decision each request meets. A new mode goes here.        |
| ``_options``          | every option, declared once (validation, pyproject, the marker, the ini       |
|                       | settings, the docs' table). A new option is a field here.                     |
| ``_bodies``           | stored request bodies, content types, content-encodings, SSE text             |
| ``_matching``         | comparable requests, field-path differences                                   |
| ``_diff``             | two cassettes compared call by call; changed words                            |
| ``_conversation``     | a call read as a conversation: messages, tools, reply text, tool calls        |
| ``_redaction``        | the rules that keep secrets out of every byte written                         |
| ``_credentials``      | the credential catalogue: shapes with their keyword prefilters                 |
| ``_stream_redaction`` | redaction of streamed and content-encoded response bodies                     |
| ``_scan``             | finding secrets in files, by the redaction engine                             |
| ``_engine``           | the replay engine: choosing the call that answers a request, replayed headers  |
| ``_call_recording``   | a recording: each call's lines from what crossed the transport (batches,      |
|                       | redaction, events), call numbers, outcomes, what is worth saving              |
| ``_sse``              | the one server-sent-events decoder; where a stream's protocol ends            |
| ``_quiet``            | a re-record compared with the old cassette: which calls keep their old lines   |
| ``_faults``           | the faults injected into replay: their spec, parsing and aiming               |
| ``_display``          | how a value is shown: ``visible`` (recorded text safe to show), ``shorten``  |
| ``_view``             | the one call model every view reads (``show``, ``diff``, HTML, textconv)      |
| ``_memo``             | ``Memo``: the one bounded memo for what requests and cassettes repeat          |
"""
