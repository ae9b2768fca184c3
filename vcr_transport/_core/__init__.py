"""The sans-I/O core: what a cassette is and what to do with a request, with no socket, no file, no
``async def`` and no import of httpx or httpx2. The transports, the context manager, the pytest plugin and
the CLI are thin shells around it.

| module        | owns                                                                          |
|---------------|-------------------------------------------------------------------------------|
| ``_format``   | the cassette format: its schema, the line builders, the parser, ``problems()`` |
| ``_bodies``   | stored request bodies, content types, content-encodings, SSE text             |
| ``_matching`` | comparable requests, field-path differences                                   |
| ``_redaction``| the rules that keep secrets out of every byte written, and the scanner        |
| ``_stream_redaction`` | redaction of streamed and content-encoded response bodies          |
| ``_replay``   | choosing the recorded call that answers a request, replayed headers           |
"""
