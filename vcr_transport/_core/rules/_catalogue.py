"""The credential catalogue: the shapes of secrets recognised without a name beside them, gitleaks' prefixed and
shape-specific rules (generated into ``_gitleaks_rules`` by ``tools/gen_credentials.py``) and ours
(``ADDITIONS``). A format's expression runs on a text only where one of its keywords occurs, all of them found
in one Aho-Corasick pass, so text with no credential costs two passes whatever the number of formats; an
expression is compiled the first time it is needed. Keys with no recognisable shape (Cohere, Mistral) are found
by name only.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import ahocorasick_rs

from ._gitleaks_rules import GITLEAKS_RULES, GitleaksRule
from ._prefix_table import PREFIX_TABLE

__all__ = [
    "ADDITIONS",
    "CATALOGUE",
    "GITLEAKS_CATALOGUE",
    "GLUED_NEEDLES",
    "KEYWORD_PATTERNS",
    "PREFIX_PATTERNS",
    "TOKEN_BYTES",
    "CredentialFormat",
    "catalogue_matches",
    "glued_matches",
    "looks_like_credential",
    "may_hold_prefixed",
]

# A prefixed shape must stand alone, not inside a longer run of (URL-safe) base64: media that holds "sk-..." or
# "ghp_..." by chance is left alone.
_BEFORE = r"(?<![A-Za-z0-9_+/.\-])"
_AFTER = r"(?![A-Za-z0-9_+/=\-])"


def looks_like_credential(value: str, minimum: int = 16) -> bool:
    """A run of ``minimum`` or more key characters holding both letters and digits: a key, not a word."""
    return (
        len(value) >= minimum
        and re.fullmatch(r"[A-Za-z0-9._~+/=-]+", value) is not None
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


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
    token = match["secret"]
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


@dataclass(frozen=True)
class CredentialFormat:
    """One credential shape. ``pattern``'s group ``secret`` (or else its group ``group``) is what gets removed.
    ``lowercase_keywords``: the keywords are searched in the lower case; ``prefixed``: they are prefixes the
    credential starts with, at a token start; ``anchored``: every match starts with one; ``prefilter``: searched
    in the lower case first, it matches wherever ``pattern`` would (cheaper than ignoring case)."""

    name: str
    keywords: tuple[str, ...]
    expression: re.Pattern[str] | str
    lowercase_keywords: bool = False
    validate: Callable[[re.Match[str]], bool] | None = None
    prefixed: bool = False
    anchored: bool = False
    prefilter: re.Pattern[str] | None = None
    group: int = 0

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        expression = self.expression
        return expression if isinstance(expression, re.Pattern) else re.compile(expression)

    def matches(self, text: str, lowered: str | None = None) -> Iterator[re.Match[str]]:
        """The matches of ``pattern`` that pass ``validate``; ``lowered`` is ``text.lower()``."""
        for match in self._candidates(text, lowered):
            if self.validate is None or self.validate(match):
                yield match

    @functools.cached_property
    def _folds(self) -> bool:
        # Ignoring case, U+017F matches "s", U+0130 and U+0131 "i", and none lower-cases to it: a keyword with
        # those letters is found in the lower case of ASCII text only. U+0130 changes length when lower-cased.
        return any(c in "si" for keyword in self.keywords for c in keyword)

    def _candidates(self, text: str, lowered: str | None) -> Iterable[re.Match[str]]:
        """When every match starts with a keyword, only the keywords' positions are tried (``str.find`` skips
        ahead far faster than a regular expression's search), in the lower case when it keeps the positions."""
        if not (self.anchored or self.prefixed):
            return self.pattern.finditer(text)
        if not self.lowercase_keywords:
            return self._anchored_matches(text, text)
        lowered = text.lower() if lowered is None else lowered
        if text.isascii() or (len(lowered) == len(text) and not self._folds):
            return self._anchored_matches(text, lowered)
        return self.pattern.finditer(text)

    def _anchored_matches(self, text: str, haystack: str) -> Iterator[re.Match[str]]:
        starts = set()
        for keyword in self.keywords:
            start = haystack.find(keyword)
            while start >= 0:
                starts.add(start)
                start = haystack.find(keyword, start + 1)
        end = 0
        for start in sorted(starts):
            if start >= end and (match := self.pattern.match(text, start)) is not None:
                end = match.end()
                yield match

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        return match.span("secret") if "secret" in self.pattern.groupindex else match.span(self.group)


def _prefixed(name: str, keywords: tuple[str, ...], body: str) -> CredentialFormat:
    return CredentialFormat(name, keywords, _BEFORE + body + _AFTER, prefixed=True)


def _entropy_at_least(minimum: float, group: int) -> Callable[[re.Match[str]], bool]:
    """gitleaks' check: the secret's Shannon entropy (bits per character) is at least ``minimum``, so that a
    placeholder (``ghp_xxxx...``) is not a key."""

    def check(match: re.Match[str]) -> bool:
        secret = match[group]
        if not secret:
            return False
        return -sum(n / len(secret) * math.log2(n / len(secret)) for n in Counter(secret).values()) >= minimum

    return check


def _from_gitleaks(rule: GitleaksRule) -> CredentialFormat:
    validate = None if rule.entropy is None else _entropy_at_least(rule.entropy, rule.group)
    prefixed = rule.kind == "prefixed"
    return CredentialFormat(
        rule.name, rule.keywords, rule.pattern, not prefixed, validate, prefixed=prefixed, group=rule.group
    )


GITLEAKS_CATALOGUE: tuple[CredentialFormat, ...] = tuple(map(_from_gitleaks, GITLEAKS_RULES))

# Ours: the LLM vendors' keys (most of which gitleaks lacks), webhook URLs, and shapes that gitleaks knows
# narrower (a fixed length where keys have grown, a prefix it reads only after the vendor's name).
ADDITIONS: tuple[CredentialFormat, ...] = (
    # LLM vendors
    _prefixed("openai/anthropic/deepseek sk- key", ("sk-",), r"sk-[A-Za-z0-9_-]{20,}"),
    _prefixed("google api key", ("AIza",), r"AIza[0-9A-Za-z_-]{35}"),
    _prefixed("google oauth access token", ("ya29.",), r"ya29\.[0-9A-Za-z_-]{20,}"),
    _prefixed("google oauth client secret", ("GOCSPX-",), r"GOCSPX-[0-9A-Za-z_-]{28}"),
    _prefixed("hugging face token", ("hf_",), r"hf_[A-Za-z0-9]{30,}"),
    _prefixed("hugging face org token", ("api_org_",), r"api_org_[A-Za-z0-9]{30,}"),
    _prefixed("groq key", ("gsk_",), r"gsk_[A-Za-z0-9]{40,}"),
    _prefixed("xai key", ("xai-",), r"xai-[A-Za-z0-9]{40,}"),
    _prefixed("replicate token", ("r8_",), r"r8_[A-Za-z0-9]{30,}"),
    _prefixed("perplexity key", ("pplx-",), r"pplx-[A-Za-z0-9]{32,}"),
    _prefixed("fireworks key", ("fw_",), r"fw_[A-Za-z0-9]{20,}"),
    _prefixed("langsmith key", ("lsv2_",), r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}"),
    _prefixed("tavily key", ("tvly-",), r"tvly-(?:dev-)?[A-Za-z0-9]{24,}"),
    _prefixed("pinecone key", ("pcsk_",), r"pcsk_[A-Za-z0-9_]{40,}"),
    _prefixed("nvidia nim key", ("nvapi-",), r"nvapi-[A-Za-z0-9_-]{40,}"),
    _prefixed("cerebras key", ("csk-",), r"csk-[A-Za-z0-9]{32,}"),
    _prefixed("together key", ("tgp_v1_",), r"tgp_v1_[A-Za-z0-9_-]{32,}"),
    _prefixed("elevenlabs key", ("sk_",), r"sk_[0-9a-f]{48}"),
    _prefixed("voyage key", ("pa-",), r"pa-[A-Za-z0-9_-]{40,}"),
    _prefixed("anyscale key", ("esecret_",), r"esecret_[A-Za-z0-9]{20,}"),
    _prefixed("openai ephemeral key", ("ek_",), r"ek_[A-Za-z0-9]{24,}"),
    # Source hosting and package registries
    _prefixed("github token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,}"),
    _prefixed("github fine-grained token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{60,}"),
    _prefixed("gitlab token", ("glpat-", "gldt-", "glrt-", "glptt-"), r"gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}"),
    _prefixed("npm token", ("npm_",), r"npm_[A-Za-z0-9]{36}"),
    _prefixed("pypi token", ("pypi-",), r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    # Messaging, payments, mail, SaaS
    _prefixed("slack token", ("xox",), r"xox[abeoprs]-[A-Za-z0-9-]{10,}"),
    _prefixed("slack app token", ("xapp-",), r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"),
    CredentialFormat(
        "slack webhook",
        ("hooks.slack.com/",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?:[A-Za-z0-9]+/){1,3}(?P<secret>[A-Za-z0-9_+-]{16,})",
        anchored=True,
    ),
    CredentialFormat(
        "discord webhook",
        ("/api/webhooks/",),
        r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d{5,25}/[A-Za-z0-9_-]{40,})",
    ),
    CredentialFormat(
        "microsoft teams webhook",
        ("webhook.office.com/", "/webhookb2/"),
        r"(?i)/webhookb2/(?P<secret>[A-Za-z0-9@/_.-]{40,})",
        lowercase_keywords=True,
    ),
    CredentialFormat(
        "zapier webhook",
        ("hooks.zapier.com/",),
        r"hooks\.zapier\.com/hooks/catch/(?P<secret>[0-9]+/[A-Za-z0-9]+)",
        anchored=True,
    ),
    CredentialFormat(
        "telegram bot token in a url path", ("/bot",), r"/bot(?P<secret>\d{5,12}:[A-Za-z0-9_-]{30,50})(?![A-Za-z0-9_-])"
    ),
    CredentialFormat(
        "telegram bot token",
        (":AA",),
        r"(?<![A-Za-z0-9_])(?:bot)?(?P<secret>\d{6,12}:AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])",
    ),
    _prefixed(
        "stripe secret key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_"), r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    ),
    _prefixed("stripe webhook secret", ("whsec_",), r"whsec_[A-Za-z0-9]{24,}"),
    _prefixed("sendgrid key", ("SG.",), r"SG\.[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{39,50}"),
    _prefixed("twilio key or account sid", ("SK", "AC"), r"(?:SK|AC)[0-9a-f]{32}"),
    _prefixed("mailgun key", ("key-",), r"key-[0-9a-f]{32}"),
    _prefixed("shopify token", ("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _prefixed("digitalocean token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),
    _prefixed("linear key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    _prefixed("notion token", ("ntn_", "secret_"), r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})"),
    _prefixed("postman key", ("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _prefixed("databricks token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?"),
    _prefixed("doppler token", ("dp.",), r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    _prefixed(
        "grafana token", ("glsa_", "glc_"), r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"
    ),
    _prefixed("sentry token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_-]{40,}"),
    _prefixed("new relic key", ("NRAK-",), r"NRAK-[A-Z0-9]{27}"),
    _prefixed("atlassian token", ("ATATT3",), r"ATATT3[A-Za-z0-9_=-]{100,}"),
    # Developer platforms
    _prefixed("vault token", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _prefixed("docker token", ("dckr_pat_", "dckr_oat_"), r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}"),
    _prefixed("tailscale key", ("tskey-",), r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"),
    _prefixed("posthog key", ("phx_", "phc_"), r"ph[xc]_[A-Za-z0-9]{40,}"),
    _prefixed("mapbox secret token", ("sk.eyJ",), r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    _prefixed("1password service account token", ("ops_eyJ",), r"ops_eyJ[A-Za-z0-9+/=_-]{50,}"),
    _prefixed(
        "netlify/heroku-style prefixed token", ("nfp_", "HRKU-"), r"(?:nfp_[A-Za-z0-9]{36,}|HRKU-[A-Za-z0-9_-]{30,})"
    ),
    _prefixed("cloudflare origin ca key", ("v1.0-",), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    _prefixed("age secret key", ("AGE-SECRET-KEY-",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # Cloud
    _prefixed(
        "aws access key id", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
    ),
    CredentialFormat(
        "aws secret access key after an aws name",
        ("aws",),
        r"(?i)aws[A-Za-z0-9_ .-]{0,30}?(?:secret|key)[A-Za-z0-9_ .-]{0,20}?[\"']?\s*[:=]?\s*[\"']?"
        r"(?P<secret>(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=.]))",
        lowercase_keywords=True,
        anchored=True,
    ),
    _prefixed(
        "aws secret access key after an access key id",
        ("AKIA", "ASIA"),
        r"(?:AKIA|ASIA)[A-Z0-9]{16}(?:[^A-Za-z0-9+/]|[A-Za-z_ ]{1,40}[:=])[^A-Za-z0-9+/]{0,20}"
        r"(?P<secret>[A-Za-z0-9+/]{40})(?!\.)",  # a JWT's first part is 40 characters too
    ),
    CredentialFormat(
        "azure connection string key",
        ("accountkey=", "sharedaccesskey=", "password=", "pwd="),
        r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|Password|Pwd)=(?!\[secret removed\])"
        r"(?P<secret>[^;\s\"'&<>\\]{4,})",
        lowercase_keywords=True,
        anchored=True,
    ),
    # Generic, structural shapes
    _prefixed("json web token", ("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    CredentialFormat(
        "pem private key",
        ("PRIVATE KEY-",),
        r"(?s)-----BEGIN[A-Z0-9 ]{0,20} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]{0,20} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
    ),
    CredentialFormat(
        "basic credentials",
        ("basic",),
        r"(?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
        lowercase_keywords=True,
        validate=_basic_credentials,
        anchored=True,
        # Ignoring case, "s" also matches U+017F and "i" U+0130 (lower-cased with a combining dot) and U+0131.
        prefilter=re.compile("ba[s\u017f](?:i\u0307?|\u0131)c\\s+\\S{6}"),
    ),
    CredentialFormat(
        "bearer credential",
        ("bearer",),
        r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        lowercase_keywords=True,
        validate=_bearer_credential,
        anchored=True,
        prefilter=re.compile(r"bearer\s+\S{8}"),  # no other character matches b, e, a or r ignoring case
    ),
    CredentialFormat(
        "h11 illegal header value",
        ("header value b",),
        r"[Ii]llegal header value b(?P<q>['\"])(?P<secret>.+?)(?P=q)(?![A-Za-z0-9])",
    ),
)
CATALOGUE: tuple[CredentialFormat, ...] = ADDITIONS + GITLEAKS_CATALOGUE

# Every prefixed credential starts a token (a run of the characters its lookbehind excludes) of at least
# _SHORTEST characters. The text is turned into tokens in C (bytes.translate), and one Aho-Corasick pass finds
# every prefix that follows a space. ``_prefix_table`` (generated by docs/_gen.py) gives, for each prefix, the
# longest first, the formats a long token starting with it may be.
TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-.")
_TO_TOKENS = bytes(byte if byte in TOKEN_BYTES else 32 for byte in range(256))
_SHORTEST = 11  # eyJ and eight characters: the first part of a JWT
PREFIX_PATTERNS: tuple[bytes, ...] = tuple(prefix for prefix, _ in PREFIX_TABLE)
_FORMATS_BY_PREFIX: dict[bytes, tuple[int, ...]] = dict(PREFIX_TABLE)
_DFA = ahocorasick_rs.Implementation.DFA  # faster than the NFA; the library's own choice up to 100 patterns
_PREFIX_FINDER = ahocorasick_rs.BytesAhoCorasick([b" " + prefix for prefix in PREFIX_PATTERNS], implementation=_DFA)
# Found anywhere: text holding none has no prefixed credential, nor has any part of it.
_ANYWHERE_FINDER = ahocorasick_rs.BytesAhoCorasick(PREFIX_PATTERNS, implementation=_DFA)
# The keywords of the formats that aren't prefixed, by (lower case, the keyword as written when it is searched
# with its case: then tested in the text itself once its lower case is found), in one pass over the lower case.
_BY_KEYWORD: dict[tuple[str, str | None], tuple[int, ...]] = {}
for _index, _format in enumerate(CATALOGUE):
    for _keyword in () if _format.prefixed else _format.keywords:
        _key = (_keyword.lower(), None if _format.lowercase_keywords else _keyword)
        _BY_KEYWORD[_key] = (*_BY_KEYWORD.get(_key, ()), _index)
_KEYWORDS = list(_BY_KEYWORD.items())
KEYWORD_PATTERNS = [lowered.encode() for (lowered, _), _ in _KEYWORDS]
_KEYWORD_FINDER = ahocorasick_rs.BytesAhoCorasick(KEYWORD_PATTERNS)


def _candidates(text: str, lowered: str, keywords: Iterable[int] | None = None) -> set[int]:
    """The formats that could match ``text``: those whose prefix starts a long token, or whose keyword
    occurs in it (``keywords``: see ``catalogue_matches``)."""
    found: set[int] = set()
    if keywords is None:
        data = lowered.encode("utf-8", "surrogatepass")
        keywords = [index for index, _, _ in _KEYWORD_FINDER.find_matches_as_indexes(data, overlapping=True)]
    for index in keywords:
        (_, cased), formats = _KEYWORDS[index]
        if cased is None or cased in text:
            found.update(formats)
    if len(text) < _SHORTEST:
        return found
    tokens = b" " + text.encode("utf-8", "surrogatepass").translate(_TO_TOKENS)
    for index, start, _ in _PREFIX_FINDER.find_matches_as_indexes(tokens, overlapping=True):
        token_start = tokens[start + 1 : start + 1 + _SHORTEST]
        if len(token_start) == _SHORTEST and b" " not in token_start:
            found.update(_FORMATS_BY_PREFIX[PREFIX_PATTERNS[index]])
    return found


def catalogue_matches(
    text: str, lowered: str | None = None, keywords: Iterable[int] | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, format name) of every catalogued credential in ``text``, in no particular order.
    ``lowered``: ``text.lower()``; ``keywords``: the index in ``KEYWORD_PATTERNS`` of each pattern found in
    the UTF-8 of ``lowered``, when the caller has them already."""
    found = []
    lowered = text.lower() if lowered is None else lowered
    for index in _candidates(text, lowered, keywords):
        credential = CATALOGUE[index]
        if credential.prefilter is None or credential.prefilter.search(lowered) is not None:
            found += [(*credential.span(match), credential.name) for match in credential.matches(text, lowered)]
    return found


def may_hold_prefixed(data: bytes) -> bool:
    """Whether ``data`` (UTF-8) holds, anywhere, a prefix a prefixed format starts with."""
    return bool(_ANYWHERE_FINDER.find_matches_as_indexes(data))


# Long prefixed shapes glued to the word before them by ``.``, ``-`` or ``/`` (``openai-insecure-api-key.sk-
# proj-...`` in Realtime's subprotocol, ``prod-ghp_...``), which the catalogue's lookbehind passes by (it spares
# media): found unless what precedes the separator is a run of 16 or more base64 characters.
_GLUED_PREFIXES = "sk-proj- sk-ant- sk-svcacct- sk-admin- ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ glpat- xoxb- xoxp-"
_GLUED_PREFIXES += " xoxa- xoxe- AKIA ASIA AIza ek_"
GLUED_NEEDLES = tuple(sep + p.lower().encode() for p in _GLUED_PREFIXES.split() for sep in (b".", b"-", b"/"))
_GLUED = re.compile(
    r"(?<=[./-])(?:sk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|xox[bpae]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[0-9A-Za-z_-]{35}"
    r"|ek_[A-Za-z0-9]{24,})"
    r"(?![A-Za-z0-9_+/=-])"
)
_BASE64_TAIL = re.compile(r"(?:[A-Za-z0-9+/]{16,}|[A-Za-z0-9_-]{16,})\Z")


def _in_base64_run(text: str, start: int) -> bool:
    """Whether the shape at ``start`` follows a run of 16 base64 characters that isn't a lower-case word (a
    ``.`` is in no base64 alphabet)."""
    if text[start - 1] == ".":
        return False
    run = _BASE64_TAIL.search(text, max(0, start - 65), start - 1)
    return run is not None and not (run[0].islower() and not any(c.isdigit() for c in run[0]))


def glued_matches(text: str) -> list[tuple[int, int]]:
    """(start, end) of each long prefixed shape glued by ``.``, ``-`` or ``/`` to a word before it."""
    return [match.span() for match in _GLUED.finditer(text) if not _in_base64_run(text, match.start())]
