"""Tests of ``vcr_transport._core.rules._encodings``: ``decoded_tokens`` (hex, base64, HTML numeric entities,
``\\xNN`` escapes and double percent-encoding of a key decoded; media and prose left alone) and
``ENCODED_NEEDLES``, what the search looks for."""

from __future__ import annotations

import base64
import html

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._encodings import ENCODED_NEEDLES, MAX_TOKEN, decoded_tokens

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def _only(text: str) -> tuple[str, str]:
    """The one token ``decoded_tokens`` finds in ``text``: (as written, decoded)."""
    tokens = decoded_tokens(text)
    assert len(tokens) == 1, tokens
    start, end, decoded = tokens[0]
    return text[start:end], decoded


def test_hex_of_a_key_is_decoded() -> None:
    encoded = KEY.encode().hex()
    assert _only(f"debug dump: {encoded} end") == (encoded, KEY)
    assert _only(f"debug dump: {encoded.upper()} end") == (encoded.upper(), KEY)


def test_base64_of_a_key_is_decoded_standard_and_url_safe() -> None:
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(f"key={KEY}".encode()).decode()
        assert _only(f"config blob {encoded} attached") == (encoded, f"key={KEY}")


def test_entities_escapes_and_double_percent_are_decoded() -> None:
    entities = "".join(f"&#{ord(c)};" for c in KEY[:8]) + KEY[8:]
    assert _only(f"<p>{entities}</p>") == (entities, KEY)
    hexed = "".join(f"&#x{ord(c):x};" for c in KEY[:3]) + KEY[3:]
    assert html.unescape(hexed) == KEY and _only(f"x {hexed} y")[1] == KEY
    escaped = "".join(f"\\x{ord(c):02x}" for c in KEY[:8]) + KEY[8:]
    assert _only(f'print("{escaped}")') == (escaped, KEY)
    double = KEY.replace("-", "%252D")
    assert _only(f"?next=https%253A%252F%252Fx%253Fk%253D{double}")[1].endswith(KEY)


def test_prose_and_plain_keys_give_no_tokens() -> None:
    assert decoded_tokens("The capital of France is Paris. Tokens: 256.") == []
    assert decoded_tokens(f"Authorization: Bearer {KEY}") == []  # nothing encoded: the other rules' work
    # hex and base64 without an encoded key prefix are not decoded (a hash, an id)
    assert decoded_tokens("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == []
    assert decoded_tokens("id " + base64.b64encode(b"hello world, just text").decode()) == []


def test_media_and_overlong_runs_are_never_decoded() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"sk-proj-\x00\xff" * 8).decode()
    assert decoded_tokens(f'{{"b64_json": "{png}"}}') == []
    long = base64.b64encode(KEY.encode() * (MAX_TOKEN // len(KEY) + 1)).decode()
    assert len(long) > MAX_TOKEN and decoded_tokens(long) == []


def test_tokens_are_in_order_and_do_not_overlap() -> None:
    first, second = KEY.encode().hex(), base64.b64encode(KEY.encode()).decode()
    tokens = decoded_tokens(f"a {first} b {second} c")
    assert [decoded for _, _, decoded in tokens] == [KEY, KEY]
    assert tokens[0][1] <= tokens[1][0]


def test_needles_hold_the_marks_and_the_encoded_prefixes_lower_case() -> None:
    assert {b"&#", b"\\x", b"%25"} <= set(ENCODED_NEEDLES)
    assert b"sk-proj-".hex().encode() in ENCODED_NEEDLES
    assert all(needle == needle.lower() for needle in ENCODED_NEEDLES)
    b64 = base64.b64encode(KEY.encode()).lower()
    assert any(needle in b64 for needle in ENCODED_NEEDLES[3:])


def test_the_redactor_removes_a_hex_encoded_key_whole() -> None:
    text = f"dump {KEY.encode().hex()} end"
    assert Redactor().redact_text(text) == f"dump {PLACEHOLDER} end"
