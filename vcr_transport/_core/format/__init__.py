"""The bottom layer of the core: what a cassette is. The line schemas, their encoders and the parser
(``_format``), stored bodies and content-encodings (``_bodies``), and the one server-sent-events decoder
(``_sse``). Imports nothing of the core above it (``tests/package/test_architecture.py``)."""
