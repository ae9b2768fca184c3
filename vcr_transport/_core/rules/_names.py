"""Secret names: the word lists and ``Names.is_secret``, which tells a header, query, form, JSON or XML name
that holds a secret, whatever its case, separators, run-together words and ``%XX`` or ``\\u`` escapes."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from urllib.parse import unquote

from .._memo import Memo
from ._patterns import regex
from ._search import searched_words

__all__ = ["QUERY_SECRET_NAMES", "SECRET_FIELD_NAMES", "Names", "decode_escapes", "words_of"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


SECRET_FIELD_NAMES = _words(
    # HTTP auth and API gateways; OAuth 2.0 and OpenID Connect; signed URLs (AWS SigV4, Google Cloud Storage); generic
    """authorization proxy-authorization api_key api-key x-api-key x-goog-api-key x-functions-key
    ocp-apim-subscription-key x-auth-token private-token x-honeycomb-team cookie set-cookie
    token access_token refresh_token id_token client_secret assertion client_assertion code_verifier
    x-amz-security-token x-amz-credential x-goog-credential
    secret password passwd pwd pass passphrase credential jwt session_key connection_string"""
)
# Secrets in a URL query or a form body only (Google's ``?key=``, OAuth's ``code``, Azure SAS ``sig``, signed
# URLs' signatures); in JSON they are data (Gemini's metadata ``key``, an error ``code``).
QUERY_SECRET_NAMES = _words("key code sig signature x-amz-signature x-goog-signature appid hapikey")
# A name whose words end with one of these is a secret (github_token, db_password, X-Custom-Api-Key).
_SECRET_SUFFIXES = tuple(
    tuple(suffix.split("_"))
    for suffix in """token secret password passwd pwd passphrase cookie jwt authorization credential assertion
    apikey pass_phrase api_key secret_key private_key access_key account_key session_key subscription_key
    functions_key connection_string""".split()
)
# "<word> token" is data: a pagination cursor or a tokenizer's special token.
_DATA_TOKEN_WORDS = _words("page next continuation sync eos bos pad unk sep cls mask start end stop")
# Any of these words anywhere makes a name secret (``auth_token_value``) unless a descriptor follows (``token_type``).
_ANYWHERE_WORDS = _words("token secret password passwd pwd passphrase credential jwt auth authorization")
# "key" is data in JSON but after one of these (``api_key``, ``license_key``); in a header or query name it is a
# secret wherever it stands (``Fastly-Key``), but after one of ``_NOT_SECRET_KEY_WORDS``.
_KEY_QUALIFIERS = _words(
    """api apis secret private access account session subscription functions auth app application license licence
    master admin client signing encryption service global user write read ingest ingestion deploy server
    management virtual"""
)
_NOT_SECRET_KEY_WORDS = _words(
    "idempotency cache sort partition primary foreign object routing dedup dedupe public header"
)
# Qualifiers that make "tokens" a list of credentials (``access_tokens``), where alone it is a count.
_TOKEN_QUALIFIERS = _words("access refresh id api auth bearer session oauth personal")
# A word after the secret one that makes the name a description of the secret.
DESCRIPTOR_WORDS = _words(
    """id ids type types kind name names count counts limit limits remaining reset used usage length len size
    budget url uri urls endpoint expires expiry expiration ttl prefix hint last4 present provided required
    enabled configured env var file path ref arn version policy format location label status method methods
    mode provider algorithm alg fingerprint scope scopes field param parameter placement strategy created
    updated rotated description title source index offset logprob logprobs probability rank"""
)
# Run-together lower case is split into these words (``accesstoken``, ``hapikey``) when made of them only, or
# when it ends with two or more of them the last a secret word (``monkey`` stays), or with a secret word.
_DICTIONARY = (
    _ANYWHERE_WORDS
    | _KEY_QUALIFIERS
    | _TOKEN_QUALIFIERS
    | _words(
        """key keys tokens secrets passwords credentials cookie string value id page next max num input output total
    count type name pass phrase"""
    )
)
_SUFFIX_WORDS = _words("token secret password passwd passphrase credential credentials secrets")
_PLURALS = {word + "s": word for word in "secret password credential passphrase jwt key cookie".split()}
_SECRET_ENDS = _ANYWHERE_WORDS | _words("key keys secrets passwords credentials")


def decode_escapes(text: str) -> str:
    """``text`` with its ``%XX`` and ``\\uXXXX`` escapes (and JSON's ``\\/``) decoded."""

    def decode_unicode(match: re.Match[str]) -> str:
        try:
            return str(json.loads(f'"{match.group()}"'))
        except ValueError:
            return match.group()

    if "%" in text:
        text = regex(r"(?:%[0-9A-Fa-f]{2})++").sub(lambda match: unquote(match.group(), errors="surrogateescape"), text)
    if "\\u" in text:
        text = regex(r"(?:\\u[0-9A-Fa-f]{4})++").sub(decode_unicode, text)
    return text.replace("\\/", "/")


_LONGEST_WORD = max(map(len, _DICTIONARY))


def _segments(word: str) -> list[tuple[int, int, str] | None]:
    """For each start, the fewest words of ``_DICTIONARY`` the rest of ``word`` is made of, each at least 2 long:
    (their count, where the first ends, the last), None if not made of them; the first shortest first word kept.
    Read from the end, a word at a time: the rest's segmentation tried from each start is cubic on a long word."""
    found: list[tuple[int, int, str] | None] = [None] * (len(word) + 1)
    for start in range(len(word) - 1, -1, -1):
        rest = len(word) - start
        if rest <= _LONGEST_WORD and word[start:] in _DICTIONARY:
            found[start] = (1, len(word), word[start:])
            continue
        best = None
        for end in range(start + 2, min(start + _LONGEST_WORD, len(word) - 2) + 1):
            after = found[end]
            if after is not None and word[start:end] in _DICTIONARY and (best is None or after[0] + 1 < best[0]):
                best = (after[0] + 1, end, after[2])
        found[start] = best
    return found


def _words_from(word: str, found: list[tuple[int, int, str] | None], start: int) -> tuple[str, ...]:
    words = []
    while (segment := found[start]) is not None and start < len(word):
        words.append(word[start : segment[1]])
        start = segment[1]
    return tuple(words)


@functools.lru_cache(maxsize=4096)
def _split_run_together(word: str) -> tuple[str, ...]:
    found = _segments(word)
    if found[0] is not None:
        return _words_from(word, found, 0)
    for start in range(1, len(word) - 2):
        tail = found[start]
        if tail is not None and (tail[0] >= 2 or tail[2] in _SUFFIX_WORDS) and tail[2] in _SECRET_ENDS:
            return (word[:start], *_words_from(word, found, start))
    return (word,)


def words_of(name: str) -> tuple[str, ...]:
    """The words of a name: split at separators and changes of case, run-together lower case split too."""
    if "%" in name or "\\" in name:
        name = decode_escapes(name)
    words: list[str] = []
    for word in regex(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])").split(name):
        lowered = word.lower()
        words.extend(_split_run_together(lowered) if len(lowered) > 4 else (lowered,) if lowered else ())
    return tuple(words)


def _data_token(words: tuple[str, ...], index: int) -> bool:
    return index > 0 and words[index] == "token" and words[index - 1] in _DATA_TOKEN_WORDS


def _is_secret_word(words: tuple[str, ...], index: int, loose: bool) -> bool:
    word = words[index]
    singular, before = _PLURALS.get(word, word), words[index - 1] if index else ""
    if singular in _ANYWHERE_WORDS:
        return True
    if singular == "key" and ((loose and word == "key") or before in _KEY_QUALIFIERS):
        return before not in _NOT_SECRET_KEY_WORDS
    return word == "tokens" and before in _TOKEN_QUALIFIERS


def _secret_by_word(words: tuple[str, ...], loose: bool) -> bool:
    """A secret word anywhere in ``words`` with no descriptor after it; ``loose``: "key" anywhere."""
    last = next((i for i in range(len(words) - 1, -1, -1) if _is_secret_word(words, i, loose)), -1)
    if last < 0 or _data_token(words, last):
        return False
    return not any(word in DESCRIPTOR_WORDS for word in words[last + 1 :])


class Names:
    """A redactor's secret names, the defaults and the user's (whole names and suffixes). ``words``: the last words
    of every secret name, one of which a secret JSON key holds."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        more = {words_of(name) for name in extra}
        self._names = frozenset({words_of(name) for name in SECRET_FIELD_NAMES} | more)
        self._query = frozenset(words_of(name) for name in QUERY_SECRET_NAMES)
        self._suffixes = _SECRET_SUFFIXES + tuple(more)
        last = {words[-1] for words in (*self._names, *self._suffixes) if words} | _ANYWHERE_WORDS | {"key"}
        self.words = frozenset(last)
        self.searched = searched_words(self.words)
        self._memo: Memo[tuple[str, int], bool] = Memo(4096)

    def is_secret(self, name: str, kind: int = 0) -> bool:
        """``kind``: 0 a JSON key, 1 a header or environment variable, 2 a query parameter or form field."""
        return self._memo.get((name, kind), lambda: self._names_a_secret(name, kind))

    def _names_a_secret(self, name: str, kind: int) -> bool:
        words = words_of(name)
        if not words or _data_token(words, len(words) - 1):
            return False
        if words in self._names or any(words[-len(suffix) :] == suffix for suffix in self._suffixes):
            return True
        if kind == 2 and (words in self._query or words[-1] == "signature"):
            return True
        return _secret_by_word(words, loose=kind > 0)
