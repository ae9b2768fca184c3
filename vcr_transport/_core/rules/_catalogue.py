"""The credential catalogue: shapes of secrets found without a name beside them, gitleaks' (generated into
``_gitleaks_rules``) and ours (one row each). An expression is compiled when first needed and runs only where one
of its keywords occurs. Keys with no recognisable shape (Cohere, Mistral) are found by name only."""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import ahocorasick_rs

from ._gitleaks_rules import GITLEAKS_RULES, GitleaksRule
from ._patterns import regex
from ._prefix_table import PREFIX_TABLE

__all__ = [
    "CATALOGUE",
    "GITLEAKS_CATALOGUE",
    "GLUED_NEEDLES",
    "KEYWORD_PATTERNS",
    "PREFIX_PATTERNS",
    "TOKEN_BYTES",
    "catalogue_matches",
    "glued_matches",
    "looks_like_credential",
    "may_hold_prefixed",
]

# A prefixed shape stands alone, not inside a longer run of (URL-safe) base64: media holding "sk-..." by chance.
_BEFORE = r"(?<![A-Za-z0-9_+/.\-])"
_AFTER = r"(?![A-Za-z0-9_+/=\-])"


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def looks_like_credential(value: str, minimum: int = 16) -> bool:
    """A run of ``minimum`` or more key characters holding both letters and digits: a key, not a word."""
    return len(value) >= minimum and regex(r"[A-Za-z0-9._~+/=-]+").fullmatch(value) is not None and _mixed(value)


def _basic_credentials(match: re.Match[str]) -> bool:
    """``Basic <base64>`` is a credential only when the base64 decodes to ``user:password``."""
    encoded = match["secret"]
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _bearer_credential(match: re.Match[str]) -> bool:
    """``bearer`` is a word in prose ("ring bearer") unless a credential shape follows it."""
    return _mixed(match["secret"])


@dataclass
class CredentialFormat:
    """One credential shape; its group ``secret`` (or else ``group``) is what goes. ``lowercase_keywords``: searched
    in the lower case; ``prefixed``: starts with a keyword at a token start; ``anchored``: every match starts with
    one; ``prefilter``: matches the lower case wherever the pattern would; ``entropy``: gitleaks' minimum Shannon
    entropy of the secret (a placeholder such as ``ghp_xxxx...`` is no key)."""

    name: str
    keywords: tuple[str, ...]
    expression: str
    lowercase_keywords: bool = False
    validate: Callable[[re.Match[str]], bool] | None = None
    prefixed: bool = False
    anchored: bool = False
    prefilter: str | None = None
    group: int = 0
    entropy: float | None = None
    bounds: Callable[[str], Iterator[tuple[int, int]]] | None = None

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.expression)

    def matches(self, text: str, lowered: str | None = None) -> Iterator[re.Match[str]]:
        """The matches that pass ``validate`` and the entropy check; ``lowered``: ``text.lower()``."""
        for match in self._anchored_matches(text, lowered) if self.anchored else self._unanchored_matches(text):
            if (self.validate is None or self.validate(match)) and (
                self.entropy is None or _entropy(match[self.group]) >= self.entropy
            ):
                yield match

    @functools.cached_property
    def _folds(self) -> bool:
        # Ignoring case, U+017F matches "s", U+0130 and U+0131 "i", and none lower-cases to it.
        return any(c in "si" for keyword in self.keywords for c in keyword)

    def _anchored_matches(self, text: str, lowered: str | None) -> Iterator[re.Match[str]]:
        """Only the keywords' positions are tried (``str.find`` is faster than a regular expression), in the lower
        case when it keeps the positions."""
        haystack = text
        if self.lowercase_keywords:
            haystack = text.lower() if lowered is None else lowered
            if not text.isascii() and (len(haystack) != len(text) or self._folds):
                yield from self.pattern.finditer(text)
                return
        end = 0
        for start in self._starts(haystack):
            if start >= end and (match := self.pattern.match(text, start)) is not None:
                end = match.end()
                yield match

    def _unanchored_matches(self, text: str) -> Iterator[re.Match[str]]:
        """With ``bounds``, only its starts are tried, each matched no further than its end."""
        if self.bounds is None:
            yield from self.pattern.finditer(text)
            return
        end = 0
        for start, stop in self.bounds(text):
            if start >= end and (match := self.pattern.match(text, start, stop)) is not None:
                end = match.end()
                yield match

    def _starts(self, haystack: str) -> list[int]:
        starts = set()
        for keyword in self.keywords:
            start = haystack.find(keyword)
            while start >= 0:
                starts.add(start)
                start = haystack.find(keyword, start + 1)
        return sorted(starts)

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        return match.span("secret") if "secret" in self.pattern.groupindex else match.span(self.group)


def _entropy(secret: str) -> float:
    """Shannon entropy in bits per character (0 for nothing)."""
    return -sum(n / len(secret) * math.log2(n / len(secret)) for n in Counter(secret).values()) if secret else 0.0


def _from_gitleaks(rule: GitleaksRule) -> CredentialFormat:
    prefixed = rule.kind == "prefixed"
    keywords, pattern, group, entropy = rule.keywords, rule.pattern, rule.group, rule.entropy
    return CredentialFormat(rule.name, keywords, pattern, not prefixed, None, prefixed, prefixed, None, group, entropy)


GITLEAKS_CATALOGUE: tuple[CredentialFormat, ...] = tuple(map(_from_gitleaks, GITLEAKS_RULES))
# Rows' validations and prefilters. Ignoring case, "s" also matches U+017F, "i" U+0130 (lower-cased with a combining
# dot) and U+0131; nothing else matches b, e, a or r.
_CHECKS = {
    "basic credentials": (_basic_credentials, "ba[s\u017f](?:i\u0307?|\u0131)c\\s+\\S{6}"),
    "bearer credential": (_bearer_credential, r"bearer\s+\S{8}"),
}


_PEM_LABEL = r"[A-Z0-9 ]{0,20} PRIVATE KEY(?: BLOCK)?-----"


def _pem_bounds(text: str) -> Iterator[tuple[int, int]]:
    """Each PEM header's start, and where its match ends at the furthest: the first end line after the header, or
    else the end of the base64 after it. A header searched the rest of the text for an end line: quadratic."""
    ends = [(match.start(), match.end(1)) for match in regex("(?=(-----END" + _PEM_LABEL + "))").finditer(text)]
    for header in regex("-----BEGIN" + _PEM_LABEL).finditer(text):
        index = bisect.bisect_left(ends, (header.end(),))
        if index < len(ends):
            yield header.start(), ends[index][1]
        else:
            other = regex(r"[^A-Za-z0-9+/=\s\\]").search(text, header.end())
            yield header.start(), len(text) if other is None else other.start()


def _quoted_bounds(text: str) -> Iterator[tuple[int, int]]:
    """Each ``illegal header value b'`` that a closing quote follows on its line (after one character), and where
    that quote ends. Each was searched to its closing quote or line end: on one line, quadratic."""
    closes = {quote: [m.start() for m in regex(quote + "(?![A-Za-z0-9])").finditer(text)] for quote in "'\""}
    lines = [match.start() for match in regex("\n").finditer(text)]
    for start in regex("[Ii]llegal header value b(['\"])").finditer(text):
        quotes, secret = closes[start[1]], start.end()
        index = bisect.bisect_left(quotes, secret + 1)
        line_end = bisect.bisect_left(lines, secret)
        if index < len(quotes) and (line_end == len(lines) or lines[line_end] > quotes[index]):
            yield start.start(), quotes[index] + 1


_BOUNDS = {"pem private key": _pem_bounds, "h11 illegal header value": _quoted_bounds}


def _rows(table: str) -> Iterator[CredentialFormat]:
    """``name | keywords | flags | expression`` a line (an indented line goes on with the expression). Flags: ``p``
    prefixed (between ``_BEFORE`` and ``_AFTER``), ``l`` keywords in the lower case, ``a`` anchored."""
    for line in table.strip().replace("\n    ", "").splitlines():
        name, keywords, flags, expression = line.split(" | ", 3)
        prefixed, (validate, prefilter) = "p" in flags, _CHECKS.get(name, (None, None))
        expression = _BEFORE + expression + _AFTER if prefixed else expression
        anchored = prefixed or "a" in flags
        yield CredentialFormat(
            name,
            tuple(keywords.split(", ")),
            expression,
            "l" in flags,
            validate,
            prefixed,
            anchored,
            prefilter,
            bounds=_BOUNDS.get(name),
        )


# Ours: LLM vendors' keys, webhook URLs, and shapes gitleaks knows narrower (a fixed length where keys have grown, a
# prefix only after the vendor's name). An AWS secret is not followed by a dot: a JWT's first part is 40 long too.
CATALOGUE: tuple[CredentialFormat, ...] = (
    *_rows(r"""
openai/anthropic/deepseek sk- key | sk- | p | sk-[A-Za-z0-9_-]{20,}
google api key | AIza | p | AIza[0-9A-Za-z_-]{35}
google oauth access token | ya29. | p | ya29\.[0-9A-Za-z_-]{20,}
google oauth client secret | GOCSPX- | p | GOCSPX-[0-9A-Za-z_-]{28}
hugging face token | hf_ | p | hf_[A-Za-z0-9]{30,}
hugging face org token | api_org_ | p | api_org_[A-Za-z0-9]{30,}
groq key | gsk_ | p | gsk_[A-Za-z0-9]{40,}
xai key | xai- | p | xai-[A-Za-z0-9]{40,}
replicate token | r8_ | p | r8_[A-Za-z0-9]{30,}
perplexity key | pplx- | p | pplx-[A-Za-z0-9]{32,}
fireworks key | fw_ | p | fw_[A-Za-z0-9]{20,}
langsmith key | lsv2_ | p | lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}
tavily key | tvly- | p | tvly-(?:dev-)?[A-Za-z0-9]{24,}
pinecone key | pcsk_ | p | pcsk_[A-Za-z0-9_]{40,}
nvidia nim key | nvapi- | p | nvapi-[A-Za-z0-9_-]{40,}
cerebras key | csk- | p | csk-[A-Za-z0-9]{32,}
together key | tgp_v1_ | p | tgp_v1_[A-Za-z0-9_-]{32,}
elevenlabs key | sk_ | p | sk_[0-9a-f]{48}
voyage key | pa- | p | pa-[A-Za-z0-9_-]{40,}
anyscale key | esecret_ | p | esecret_[A-Za-z0-9]{20,}
openai ephemeral key | ek_ | p | ek_[A-Za-z0-9]{24,}
github token | ghp_, gho_, ghu_, ghs_, ghr_ | p | gh[pousr]_[A-Za-z0-9]{36,}
github fine-grained token | github_pat_ | p | github_pat_[A-Za-z0-9_]{60,}
gitlab token | glpat-, gldt-, glrt-, glptt- | p | gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}
npm token | npm_ | p | npm_[A-Za-z0-9]{36}
pypi token | pypi- | p | pypi-AgE[A-Za-z0-9_-]{50,}
slack token | xox | p | xox[abeoprs]-[A-Za-z0-9-]{10,}
slack app token | xapp- | p | xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+
slack webhook | hooks.slack.com/ | a | hooks\.slack\.com/(?:services|workflows|triggers)/(?:[A-Za-z0-9]+/){1,3}
    (?P<secret>[A-Za-z0-9_+-]{16,})
discord webhook | /api/webhooks/ | - | discord(?:app)?\.com/api/webhooks/(?P<secret>\d{5,25}/[A-Za-z0-9_-]{40,})
microsoft teams webhook | webhook.office.com/, /webhookb2/ | l | (?i)/webhookb2/(?P<secret>[A-Za-z0-9@/_.-]{40,})
zapier webhook | hooks.zapier.com/ | a | hooks\.zapier\.com/hooks/catch/(?P<secret>[0-9]+/[A-Za-z0-9]+)
telegram bot token in a url path | /bot | - | /bot(?P<secret>\d{5,12}:[A-Za-z0-9_-]{30,50})(?![A-Za-z0-9_-])
telegram bot token | :AA | - | (?<![A-Za-z0-9_])(?:bot)?
    (?P<secret>\d{6,12}:AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])
stripe secret key | sk_live_, sk_test_, rk_live_, rk_test_ | p | [rs]k_(?:live|test)_[A-Za-z0-9]{16,}
stripe webhook secret | whsec_ | p | whsec_[A-Za-z0-9]{24,}
sendgrid key | SG. | p | SG\.[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{39,50}
twilio key or account sid | SK, AC | p | (?:SK|AC)[0-9a-f]{32}
mailgun key | key- | p | key-[0-9a-f]{32}
shopify token | shpat_, shpss_, shpca_, shppa_ | p | shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}
digitalocean token | dop_v1_, doo_v1_, dor_v1_ | p | do[opr]_v1_[a-f0-9]{64}
linear key | lin_api_ | p | lin_api_[A-Za-z0-9]{40}
notion token | ntn_, secret_ | p | (?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})
postman key | PMAK- | p | PMAK-[a-f0-9]{24}-[a-f0-9]{34}
databricks token | dapi | p | dapi[a-f0-9]{32}(?:-\d)?
doppler token | dp. | p | dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}
grafana token | glsa_, glc_ | p | (?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})
sentry token | sntrys_, sntryu_ | p | sntry[su]_[A-Za-z0-9+/=_-]{40,}
new relic key | NRAK- | p | NRAK-[A-Z0-9]{27}
atlassian token | ATATT3 | p | ATATT3[A-Za-z0-9_=-]{100,}
vault token | hvs., hvb., hvr. | p | hv[sbr]\.[A-Za-z0-9_-]{24,}
docker token | dckr_pat_, dckr_oat_ | p | dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}
tailscale key | tskey- | p | tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}
posthog key | phx_, phc_ | p | ph[xc]_[A-Za-z0-9]{40,}
mapbox secret token | sk.eyJ | p | sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}
1password service account token | ops_eyJ | p | ops_eyJ[A-Za-z0-9+/=_-]{50,}
netlify/heroku-style prefixed token | nfp_, HRKU- | p | (?:nfp_[A-Za-z0-9]{36,}|HRKU-[A-Za-z0-9_-]{30,})
cloudflare origin ca key | v1.0- | p | v1\.0-[a-f0-9]{24}-[a-f0-9]{146}
age secret key | AGE-SECRET-KEY- | p | AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}
aws access key id | AKIA, ASIA, ABIA, ACCA, A3T | p | (?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}
aws secret access key after an aws name | aws | la | (?i)aws[A-Za-z0-9_ .-]{0,30}?(?:secret|key)[A-Za-z0-9_ .-]{0,20}?
    [\"']?\s*[:=]?\s*[\"']?(?P<secret>(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=.]))
aws secret access key after an access key id | AKIA, ASIA | p | (?:AKIA|ASIA)[A-Z0-9]{16}
    (?:[^A-Za-z0-9+/]|[A-Za-z_ ]{1,40}[:=])[^A-Za-z0-9+/]{0,20}(?P<secret>[A-Za-z0-9+/]{40})(?!\.)
azure connection string key | accountkey=, sharedaccesskey=, password=, pwd= | la | (?i)(?<![A-Za-z0-9])
    (?:AccountKey|SharedAccessKey|Password|Pwd)=(?!\[secret removed\])(?P<secret>[^;\s\"'&<>\\]{4,})
json web token | eyJ | p | eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*
pem private key | PRIVATE KEY- | - | (?s)-----BEGIN[A-Z0-9 ]{0,20} PRIVATE KEY(?: BLOCK)?-----
    (?:.*?-----END[A-Z0-9 ]{0,20} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)
basic credentials | basic | la | (?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])
bearer credential | bearer | la | (?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})
h11 illegal header value | header value b | - | [Ii]llegal header value b(?P<q>['\"])
    (?P<secret>.+?)(?P=q)(?![A-Za-z0-9])
"""),
    *GITLEAKS_CATALOGUE,
)

# A prefixed credential starts a token (a run of the characters its lookbehind excludes) of _SHORTEST or more: in the
# text made tokens (bytes.translate), one pass finds each prefix after a space; ``_prefix_table`` gives its formats.
TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-.")
_TO_TOKENS = bytes(byte if byte in TOKEN_BYTES else 32 for byte in range(256))
_SHORTEST = 11  # eyJ and eight characters: the first part of a JWT
PREFIX_PATTERNS: tuple[bytes, ...] = tuple(prefix for prefix, _ in PREFIX_TABLE)
_FORMATS_BY_PREFIX: dict[bytes, tuple[int, ...]] = dict(PREFIX_TABLE)
# The other formats by keyword: its lower case (searched in the lower case) and, if searched with its case, itself.
_BY_KEYWORD: dict[tuple[str, str | None], list[int]] = {}
for _index, _format in enumerate(CATALOGUE):
    for _keyword in () if _format.prefixed else _format.keywords:
        _BY_KEYWORD.setdefault((_keyword.lower(), None if _format.lowercase_keywords else _keyword), []).append(_index)
_KEYWORDS = list(_BY_KEYWORD.items())
KEYWORD_PATTERNS = [lowered.encode() for (lowered, _), _ in _KEYWORDS]


@functools.cache
def _finder(which: str) -> ahocorasick_rs.BytesAhoCorasick:
    """Built on first use: the prefixes after a space (``tokens``), anywhere, or the keywords (few: a DFA)."""
    if which == "keywords":
        return ahocorasick_rs.BytesAhoCorasick(KEYWORD_PATTERNS)
    patterns = [b" " + prefix for prefix in PREFIX_PATTERNS] if which == "tokens" else PREFIX_PATTERNS
    return ahocorasick_rs.BytesAhoCorasick(patterns, implementation=ahocorasick_rs.Implementation.DFA)


def _candidates(text: str, lowered: str, keywords: Iterable[int] | None = None) -> set[int]:
    """The formats whose prefix starts a long token of ``text`` or whose keyword occurs in it."""
    found: set[int] = set()
    if keywords is None:
        data = lowered.encode("utf-8", "surrogatepass")
        keywords = [index for index, _, _ in _finder("keywords").find_matches_as_indexes(data, overlapping=True)]
    for index in set(keywords):  # once a keyword, not once an occurrence: ``in text`` reads the whole text
        (_, cased), formats = _KEYWORDS[index]
        if cased is None or cased in text:
            found.update(formats)
    if len(text) < _SHORTEST:
        return found
    tokens = b" " + text.encode("utf-8", "surrogatepass").translate(_TO_TOKENS)
    for index, start, _ in _finder("tokens").find_matches_as_indexes(tokens, overlapping=True):
        token_start = tokens[start + 1 : start + 1 + _SHORTEST]
        if len(token_start) == _SHORTEST and b" " not in token_start:
            found.update(_FORMATS_BY_PREFIX[PREFIX_PATTERNS[index]])
    return found


def catalogue_matches(
    text: str, lowered: str | None = None, keywords: Iterable[int] | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, format name) of each catalogued credential in ``text``, unordered. ``lowered``: ``text.lower()``;
    ``keywords``: the index in ``KEYWORD_PATTERNS`` of each one in the UTF-8 of ``lowered``."""
    found = []
    lowered = text.lower() if lowered is None else lowered
    for index in _candidates(text, lowered, keywords):
        credential = CATALOGUE[index]
        if credential.prefilter is None or regex(credential.prefilter).search(lowered) is not None:
            found += [(*credential.span(match), credential.name) for match in credential.matches(text, lowered)]
    return found


def may_hold_prefixed(data: bytes) -> bool:
    """Whether ``data`` (UTF-8) holds, anywhere, a prefix a prefixed format starts with."""
    return bool(_finder("anywhere").find_matches_as_indexes(data))


# Long prefixed shapes glued by ".", "-" or "/" to a word (Realtime's ``openai-insecure-api-key.sk-proj-...``),
# which the lookbehind passes by: found unless a run of 16 or more base64 characters precedes the separator (media).
_GLUED_SHAPES = {
    "sk-proj- sk-ant- sk-svcacct- sk-admin-": "[A-Za-z0-9_-]{20,}",
    "sk-": "[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",  # OpenAI's legacy user keys
    "ghp_ gho_ ghu_ ghs_ ghr_": "[A-Za-z0-9]{36,}",
    "github_pat_": "[A-Za-z0-9_]{60,}",
    "glpat-": "[A-Za-z0-9_-]{20,}",
    "xoxb- xoxp- xoxa- xoxe-": "[A-Za-z0-9-]{10,}",
    "AKIA ASIA": "[A-Z0-9]{16}",
    "AIza": "[0-9A-Za-z_-]{35}",
    "ek_": "[A-Za-z0-9]{24,}",
}
_GLUED_PREFIXES = " ".join(_GLUED_SHAPES).split()
GLUED_NEEDLES = tuple(sep + prefix.lower().encode() for prefix in _GLUED_PREFIXES for sep in (b".", b"-", b"/"))
_GLUED_ALTERNATIVES = "|".join(f"(?:{prefixes.replace(' ', '|')}){rest}" for prefixes, rest in _GLUED_SHAPES.items())
_GLUED = f"(?<=[./-])(?:{_GLUED_ALTERNATIVES})(?![A-Za-z0-9_+/=-])"


def _in_base64_run(text: str, start: int) -> bool:
    """Whether a run of 16 base64 characters, not a lower-case word, precedes the separator (``.`` is in none)."""
    if text[start - 1] == ".":
        return False
    run = regex(r"(?:[A-Za-z0-9+/]{16,}|[A-Za-z0-9_-]{16,})\Z").search(text, max(0, start - 65), start - 1)
    return run is not None and not (run[0].islower() and not any(c.isdigit() for c in run[0]))


def glued_matches(text: str) -> list[tuple[int, int]]:
    """(start, end) of each long prefixed shape glued by ``.``, ``-`` or ``/`` to a word before it."""
    return [match.span() for match in regex(_GLUED).finditer(text) if not _in_base64_run(text, match.start())]
