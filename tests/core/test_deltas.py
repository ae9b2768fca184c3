"""Tests of ``vcr_transport._core.rules._deltas``: the text vendor streams carry piece by piece
(``delta_texts``, ``delta_channels`` for openai chat, anthropic, gemini, the Responses API and Ollama), the
edits that remove a secret spread over pieces (``delta_edits``), ``changed_span`` and ``split_edited``."""

from __future__ import annotations

import json
from typing import Any

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._deltas import (
    changed_span,
    cut_tails,
    delta_channels,
    delta_edits,
    delta_texts,
    split_edited,
)

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def _sse(events: list[dict[str, Any]], done: bool = False) -> bytes:
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _chat_chunk(content: str, index: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": index, "delta": {"content": content}}],
    }


def test_openai_chat_deltas_are_read_per_choice() -> None:
    body = _sse([_chat_chunk("Hel"), _chat_chunk("lo", 0), _chat_chunk("Bon", 1), _chat_chunk("jour", 1)], done=True)
    assert delta_texts(body) == {("chat", 0): ["Hel", "lo"], ("chat", 1): ["Bon", "jour"]}


def test_openai_tool_call_arguments_are_a_channel_of_their_own() -> None:
    call = {"index": 0, "function": {"arguments": '{"city": '}}
    more = {"index": 0, "function": {"arguments": '"Paris"}'}}
    body = _sse([{"choices": [{"index": 0, "delta": {"tool_calls": [c]}}]} for c in (call, more)])
    assert delta_texts(body) == {("chat", 0, "tool", 0): ['{"city": ', '"Paris"}']}


def test_anthropic_content_block_deltas_by_block_and_kind() -> None:
    events = [
        {"type": "message_start", "message": {"id": "msg_1"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi "}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "there"}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
    ]
    texts = delta_texts(_sse(events))
    assert texts == {
        ("anthropic", 0, "thinking"): ["Let me"],
        ("anthropic", 1, "text"): ["Hi ", "there"],
        ("anthropic", 2, "partial_json"): ["{}"],
    }


def test_gemini_candidates_thoughts_apart_and_ollama_ndjson() -> None:
    gemini = [
        {"candidates": [{"content": {"parts": [{"text": "plan", "thought": True}], "role": "model"}}]},
        {"candidates": [{"content": {"parts": [{"text": "Answer"}], "role": "model"}, "index": 0}]},
    ]
    assert delta_texts(_sse(gemini)) == {("gemini", 0, True): ["plan"], ("gemini", 0, False): ["Answer"]}
    ollama = b'{"model":"llama3","message":{"role":"assistant","content":"Hi"},"done":false}\n'
    ollama += b'{"model":"llama3","message":{"role":"assistant","content":"!"},"done":true}\n'
    assert delta_texts(ollama) == {("ollama", True, "content"): ["Hi", "!"]}


def test_delta_channels_give_each_pieces_raw_span() -> None:
    body = _sse([_chat_chunk("caf\u00e9 "), _chat_chunk("ok")])
    channels = delta_channels(body)
    pieces = channels[("chat", 0)]
    assert [value for _, _, value in pieces] == ["caf\u00e9 ", "ok"]
    assert [body[start:end] for start, end, _ in pieces] == [b"caf\\u00e9 ", b"ok"]


def test_delta_edits_remove_a_key_spread_over_three_deltas() -> None:
    pieces = ["Your key is " + KEY[:10], KEY[10:25], KEY[25:] + " - keep it safe."]
    body = _sse([_chat_chunk(piece) for piece in pieces], done=True)
    edits = delta_edits(body, Redactor())
    assert edits, "the key spread over deltas was not found"
    edited = split_edited(body, edits, [len(body)])[0]
    text = "".join(delta_texts(edited)[("chat", 0)])
    assert KEY[:10] not in text and KEY[10:25] not in text and KEY[25:] not in text
    assert text == f"Your key is {PLACEHOLDER} - keep it safe."


def test_a_piece_holding_a_lone_surrogate_keeps_it_escaped() -> None:
    """A delta may carry ``\\ud800`` (half a character cut by the model), which UTF-8 can't hold: the edited
    piece writes it as JSON did, where writing it raw raised and the stream's redaction failed."""
    body = _sse([_chat_chunk("x \ud800 " + KEY[:20]), _chat_chunk(KEY[20:] + " tail")])
    edited = split_edited(body, delta_edits(body, Redactor()), [len(body)])[0]
    assert b'"x \\ud800 [secret removed]"' in edited and KEY[20:].encode() not in edited
    assert "".join(delta_texts(edited)[("chat", 0)]) == f"x \ud800 {PLACEHOLDER} tail"


def test_delta_edits_change_nothing_in_a_clean_stream() -> None:
    body = _sse([_chat_chunk("The capital "), _chat_chunk("of France is Paris.")], done=True)
    assert delta_edits(body, Redactor()) == []


def test_changed_span_and_split_edited_keep_boundaries_outside_edits() -> None:
    assert changed_span("abcXYZdef", "abc*def") == (3, 6)
    assert changed_span("same", "same") == (4, 4)
    original = b"aaaa" + b"SECRET" + b"bbbb"
    # pieces: "aaaaSE" | "CRET" | "bbbb": the boundary inside the edit moves to its end
    pieces = split_edited(original, [(4, 10, b"[R]")], [6, 4, 4])
    assert pieces == [b"aaaa[R]", b"", b"bbbb"]
    assert b"".join(pieces) == b"aaaa[R]bbbb"


def test_cut_tails_are_the_key_characters_after_a_piece_that_ends_with_the_placeholder() -> None:
    values = ["key ", PLACEHOLDER, "Ab3_dE-f9", "gH2.iJ4. Then ", PLACEHOLDER, " and", PLACEHOLDER + " x"]
    text = "".join(values)
    assert [text[start:end] for start, end in cut_tails(values)] == ["Ab3_dE-f9gH2.iJ4"]  # a dot only inside
    assert cut_tails(["a ", PLACEHOLDER + "b", "cd"]) == []  # the placeholder doesn't end its piece
    for words in (["shown as ", PLACEHOLDER, "-style text"], ["Replace ", PLACEHOLDER, "_HERE with yours"]):
        assert cut_tails(words) == [], "a model that wrote the placeholder itself: its text goes on"
