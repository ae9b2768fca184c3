"""A shared cassette (``_shared``): one test's calls merged in their place, and owners dropped, every other
owner's lines kept byte for byte."""

from __future__ import annotations

from helpers import call_lines, jsonl

from vcr_transport._core.format._format import Cassette, merge_shared, without_owners

HEADER = {"type": "header", "format_version": 1}


def test_a_shared_cassette_merges_one_owners_calls_in_their_place() -> None:
    old = jsonl(
        [
            HEADER,
            *call_lines(0, "https://a.test/a1", "t::a"),
            *call_lines(1, "https://a.test/b1", "t::b"),
            *call_lines(2, "https://a.test/b2", "t::b"),
            *call_lines(3, "https://a.test/c1", "t::c"),
        ]
    )
    # test b re-recorded: one call now, in the place its two were; no owner on the new lines yet.
    merged = merge_shared(old, jsonl([HEADER, *call_lines(0, "https://a.test/b9")]), "t::b")
    cassette = Cassette.parse(merged, "shared.jsonl")
    assert cassette.header["shared"] is True
    assert [(c.index, c.owner, c.url[-2:]) for c in cassette.calls] == [
        (0, "t::a", "a1"),
        (1, "t::b", "b9"),
        (2, "t::c", "c1"),
    ]
    assert merged.splitlines()[1:5] == old.splitlines()[1:5]  # test a's lines, byte for byte
    # A new owner goes after the others; each test sees its own calls alone, numbered from 0.
    merged = merge_shared(merged, jsonl([HEADER, *call_lines(0, "https://a.test/d1")]), "t::d")
    cassette = Cassette.parse(merged, "shared.jsonl")
    assert [c.owner for c in cassette.calls] == ["t::a", "t::b", "t::c", "t::d"]
    own = cassette.owned_by("t::c")
    assert [(c.index, c.url[-2:]) for c in own.calls] == [(0, "c1")] and own.origin == [2]
    assert cassette.owned_by("t::e") is cassette  # a test with no calls of its own replays them all
    # A cassette of no owners (recorded before it was shared) is every test's whole, and the first test to
    # record into it claims its calls.
    legacy = Cassette.parse(
        old.replace(b',"test":"t::b"', b"").replace(b',"test":"t::a"', b"").replace(b',"test":"t::c"', b""), "x"
    )
    assert legacy.owned_by("t::a") is legacy
    merged = merge_shared(
        jsonl([HEADER, *call_lines(0, "https://a.test/a1")]),
        jsonl([HEADER, *call_lines(0, "https://a.test/a7")]),
        "t::a",
    )
    assert [(c.owner, c.url[-2:]) for c in Cassette.parse(merged, "x").calls] == [("t::a", "a7")]


def test_a_shared_cassette_without_some_owners_keeps_the_others_lines() -> None:
    old = jsonl(
        [
            HEADER,
            *call_lines(0, "https://a.test/a1", "t::a"),
            *call_lines(1, "https://a.test/b1", "t::b"),
            *call_lines(2, "https://a.test/c1", "t::c"),
            *call_lines(3, "https://a.test/c2", "t::c"),
        ]
    )
    kept = without_owners(old, {"t::b"})
    cassette = Cassette.parse(kept, "shared.jsonl")
    assert [(c.index, c.owner, c.url[-2:]) for c in cassette.calls] == [
        (0, "t::a", "a1"),
        (1, "t::c", "c1"),
        (2, "t::c", "c2"),
    ]
    assert kept.splitlines()[:3] == old.splitlines()[:3]  # the header and test a's lines, byte for byte
    assert without_owners(old, set()) == old
