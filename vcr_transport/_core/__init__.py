"""The sans-I/O core: what a cassette is and what to do with a request, with no socket, no file, no
``async def`` and no import of httpx or httpx2. The transports, the context manager, the pytest plugin and the
CLI are thin shells around it.

The core is in layers, each a package that imports only the layers below it
(``tests/package/test_architecture.py`` holds both rules):

| layer      | owns                                                                                     |
|------------|------------------------------------------------------------------------------------------|
| ``format`` | the cassette format: line schemas, encoders, the parser; stored bodies; the SSE decoder  |
| ``rules``  | redaction (the rules that keep secrets out of every byte written) and the guard's hosts  |
| ``engine`` | matching, the replay engine, modes, faults, options, a call's recording, WebSocket        |
|            | playback, quiet re-records                                                               |
| ``views``  | a recorded call as a reader sees it: the call model, conversations, shapes, pairing      |

``_memo`` (the one bounded memo) is a leaf every layer may use. Below the core sit the package's leaves
``_version``, ``_display`` (how a value is shown: ``visible``, ``shorten``, ``MISSING``) and ``_exceptions``.
"""
