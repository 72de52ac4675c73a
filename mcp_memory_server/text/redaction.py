"""Secret detection for every write path: memories never store credentials (SPEC 4).

Rules run in priority order and the first to claim a span keeps it, so `password: sk-proj-...` is
reported as an OpenAI key. Shapes are secrets wherever they appear: provider key prefixes, PEM
private key blocks, JWTs, Luhn-valid card numbers, `user:password@` in URLs, Authorization headers.
Statements name a secret and give its value (密码是 hunter2, `pwd=...`, `api_key: ...`): only the
value is withheld, and only when it looks like one, because ordinary memories talk about passwords
and tokens all the time (我忘记密码了, `def login(user, password):`, `password = input()`).

Not withheld, because they are not credentials: Stripe publishable keys (pk_live_, pk_test_; made
to be embedded in web pages), Twilio Account SIDs (AC...), phone numbers, e-mail addresses, user
names, Chinese resident ID numbers (personal data, not a credential; their 18 digits are not taken
for a card), order and tracking numbers, one-time verification codes. Missed on purpose: a password
with no digit, symbol or inner capital in English prose ("my password is sunshine" has the shape of
"my password is weak").
"""

from __future__ import annotations

import base64
import bisect
import functools
import itertools
import keyword
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .lazy_pattern import LazyPattern, lazy

__all__ = ["Finding", "Redaction", "describe", "find_secrets", "redact"]


@dataclass(frozen=True)
class Finding:
    """One secret in a text: a short label people understand and the span of the secret itself."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """The text with every secret replaced by `[withheld: kind]`; the kinds in order, once each."""

    text: str
    withheld: tuple[str, ...]


Span = tuple[int, int]
Check = Callable[[re.Match[str]], Span | None]
Keep = Callable[[Span], bool]


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: LazyPattern
    check: Check
    hints: tuple[str, ...] = ()  # lower-case; the pattern cannot match unless one occurs in the text

    def spans(self, text: str, keep: Keep) -> Iterator[Span]:
        pos = 0
        while (m := self.pattern.search(text, pos)) is not None:
            span = self.check(m)
            if span is not None and keep(span):
                yield span
                # A span past the match (a passphrase's line) holds this rule's matches starting in it.
                pos = max(m.end(), span[1])
            else:  # a rejected statement may hide an accepted one inside it ("password: none;pwd=x")
                pos = m.start() + 1 if span is None else m.end()


# Full-width ASCII (ｐｗｄ：，＝) and the ideographic space fold to ASCII one character for one, so
# the patterns stay ASCII and spans found in the folded text are spans of the original.
_FOLD = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_WITHHELD = lazy(r"\[withheld: [^\]\n]{1,60}\]")  # already redacted: redact() is idempotent
_SEGMENTS = lazy(r"[^-_.]+")
_WORDISH = lazy(r"[A-Za-z][a-z]*|[A-Z]+|\d{1,4}|v\d+")
# CamelCase with numbers (Ed25519PrivateKey, iPhone15): each run taken whole (possessive), so that a
# long run cannot be split in exponentially many ways; never searched from inside a run.
_CAMEL = lazy(r"(?<![A-Za-z0-9])(?=[A-Z0-9]*+[a-z])[a-z]*+(?:[A-Z]++[a-z]*+|\d++)*+")


def _looks_random(value: str) -> bool:
    """Long, letters and digits mixed, high entropy, and not a name: words and small numbers
    (MY_APP_TOKEN_2024, prod-api-key-v2) or CamelCase with numbers (Ed25519PrivateKey)."""
    return (
        len(value) >= 16
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and -sum(c / len(value) * math.log2(c / len(value)) for c in Counter(value).values()) >= 3.0  # bits/char
        and not all(_WORDISH.fullmatch(s) or _CAMEL.fullmatch(s) for s in _SEGMENTS.findall(value))
    )


def _span(m: re.Match[str]) -> Span:
    """The value's span when the pattern names one (group v), else the whole match."""
    return m.span("v") if "v" in m.re.groupindex else m.span()


def _random_value(m: re.Match[str]) -> Span | None:
    return m.span("v") if _looks_random(m.group("v")) else None


def _mixed(m: re.Match[str]) -> Span | None:
    """For prefixes that could begin an ordinary word (sk-, hf_, npm_): the key part has digits."""
    return m.span() if any(c.isdigit() for c in m.group()) else None


def _provider(kind: str, hints: str, pattern: str, check: Check = _span) -> _Rule:
    bounded = lazy(r"(?<![A-Za-z0-9_\-])(?:" + pattern + r")(?![A-Za-z0-9_\-])")
    return _Rule(kind, bounded, check, tuple(hints.split()))


_PROVIDERS = [
    _provider("API key (Anthropic)", "sk-", r"sk-ant-(?:api|admin|oat|ort)\d\d-[A-Za-z0-9_\-]{32,}"),
    _provider("API key (OpenAI)", "sk-", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{32,}"),
    _provider("API key (OpenAI)", "sk-", r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    # Many providers copy the sk- prefix (DeepSeek, Moonshot, OpenRouter's sk-or-v1-...).
    _provider("API key", "sk-", r"sk-(?:[A-Za-z0-9]{1,8}-){0,2}[A-Za-z0-9]{24,}", _mixed),
    _provider("GitHub token", "gh github_pat_", r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"),
    _provider("GitLab token", "gl", r"gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_\-]{20,}"),
    _provider("AWS access key", "akia asia", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    _provider("Google API key", "aiza", r"AIza[A-Za-z0-9_\-]{35}"),
    _provider("Google OAuth secret", "gocspx- ya29.", r"GOCSPX-[A-Za-z0-9_\-]{28}|ya29\.[A-Za-z0-9_\-]{30,}"),
    _provider("Slack token", "xox xapp-", r"xox[abposr]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{20,}", _mixed),
    _provider("Slack webhook", "hooks.slack", r"https://hooks\.slack\.com/services/T\w+/B\w+/[A-Za-z0-9]{16,}"),
    # Test-mode Stripe keys still open the account's API; publishable ones (pk_) are public.
    _provider("Stripe key", "_live_ _test_ whsec_", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"),
    _provider("Twilio key", "sk", r"SK[0-9a-f]{32}"),
    _provider("SendGrid key", "sg.", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{30,}"),
    _provider("npm token", "npm_", r"npm_[A-Za-z0-9]{36,}", _mixed),
    _provider("PyPI token", "pypi-", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _provider("Hugging Face token", "hf_", r"hf_[A-Za-z0-9]{30,}", _mixed),
    _provider("Alibaba Cloud AccessKey", "ltai", r"LTAI[A-Za-z0-9]{12,20}", _mixed),
    _provider("Tencent Cloud SecretId", "akid", r"AKID[A-Za-z0-9]{32}"),
    _provider("Telegram bot token", ":aa", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}"),
    _provider("JWT", "eyj", r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*"),
]


_PEM_BEGIN = lazy(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = lazy(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_LINES = lazy(r"(?<!\s)(?:\s*+[A-Za-z0-9+/=]{16,}+)++")  # matched right after a BEGIN line
_PEM_KEY = lazy(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16}")


class _PemRule(_Rule):
    """A private key block from its BEGIN line to the first END line after it, or else over the key's
    lines; the END line is searched for once, not again from each BEGIN line before it."""

    def spans(self, text: str, keep: Keep) -> Iterator[Span]:
        pos = 0
        end_line = _PEM_END.search(text)  # the first END line after the start of the last search
        while (begin := self.pattern.search(text, pos)) is not None:
            if end_line is not None and end_line.start() < begin.end():
                end_line = _PEM_END.search(text, begin.end())
            block = end_line or _PEM_LINES.match(text, begin.end())
            # A note about the format has no key between the BEGIN line and the next five dashes.
            dashes = text.find("-----", begin.end(), block.end()) if block is not None else -1
            if block is None or not _PEM_KEY.search(text, begin.end(), block.end() if dashes < 0 else dashes):
                pos = begin.start() + 1
                continue
            if keep(span := (begin.start(), block.end())):
                yield span
            pos = block.end()


# Statements. After the label: an optional closing quote or Markdown bold (JSON keys, **password**),
# then the separator; [ \t] rather than \s, so `if not password:` does not take the next line.
_STRONG = r"""(?P<strong>[*"'`]{0,2}[ \t]*(?:=>|==?|:=|:)[ \t]*)"""
_ZH = (
    r"(?P<zh>[ \t]*(?:都|也|还|就|仍然|一直|现在|已经|已)?"
    r"(?:是|为|改成了?|改为|换成了?|设置?[为成]了?|设定为)[ \t]*)"
)
_EN = (
    r"(?P<weak>(?:[ \t]+(?:for|of|on)(?:[ \t]+[^\s:=]+){1,4}?)?[ \t]+"
    r"(?:(?:(?:is|was|got|has[ \t]+been)[ \t]+)?(?:set|changed|updated)[ \t]+to"  # longest first
    r"|(?:is|was|has[ \t]+been)(?:[ \t]+(?:now|still))?|to)[ \t]+)"
)
_BARE = r"(?P<bare>[ \t]+)"
_CONNECTOR = f"(?:{_STRONG}|{_ZH}|{_EN}|{_BARE})"
_QUOTES = {"v1": '"{}"', "v2": "'{}'", "v3": "`{}`", "v4": "“{}”", "v5": "「{}」"}
_VALUE = (
    "(?:[bBrR]?(?:"  # b'...' and r"..." are quoted too
    + "|".join(q.format(f"(?P<{name}>[^\n{q[-1]}]{{1,128}})") for name, q in _QUOTES.items())
    # Unquoted: printable ASCII up to the next field of a query or connection string (&user=, ;Db=).
    + r")|(?P<v>(?:(?![;&,][A-Za-z_][\w.\-]*=)[!-~]){1,128}))"
)

# Words that follow "password:" in schemas, code and prose, and hashing schemes (密码是 SHA256 加密的).
_NOT_VALUES = """
required optional none null nil undefined true false str string int bytes text varchar char secret secretstr password
passwd pwd pass passphrase token yourpassword your_password changeme incorrect correct wrong invalid valid expired weak
strong empty blank missing hidden masked redacted reset changed protected encrypted hashed unknown same different input
getpass bool boolean float dict list any object secretbytes md5 sha1 sha256 sha-256 sha512 bcrypt argon2 scrypt pbkdf2
plaintext hash aes rsa base64
"""
_NOT_A_VALUE = frozenset(_NOT_VALUES.split())
# Tests of a whole value, anchored (\A: never searched). Masks, template and environment variables,
# query parameters, structures, YAML tags.
_PLACEHOLDER = lazy(r"\A(?:[*xX•.#?_\-]+|(?=.*[*•]{3}).*|[<{\[(].*|\$(?:\{?\w+\}?|\(.*)|%\(?\w*\)?[sd]|[:@!]\w+)")
_CALL = lazy(r"\A[A-Za-z_][\w.]*[(\[]")  # input(), os.environ["X"], request.form['password']
_ATTRIBUTE = lazy(r"\A[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # self.password, settings.DB_PASSWORD
# E-mail addresses, URLs, phone numbers and paths (pwd: /home/alice) are not passwords.
_CONTACT = lazy(r"\A(?:[\w.+\-]+@[\w\-]+\.[\w.\-]+|\w+://\S*|www\.\S+|\+\d+|[~.]?/\S*)")
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# What follows a value, where it ends (the lookbehinds: no search again from each blank of a run).
_PROSE_NEXT = lazy(r"(?<![ \t])[ \t]+[a-z]")
_UNIT_NEXT = lazy(r"(?<![ \t])[ \t]*[年月日号位次个天元块岁]")
_ANNOTATION_NEXT = lazy(r"(?<![ \t])[ \t]*(?:\||=(?!=))")  # `password: _Secret | None = None`


def _value(m: re.Match[str]) -> tuple[str, int, int, bool]:
    """The value after a label: (text, start, end, quoted), trailing punctuation trimmed."""
    for name in _QUOTES:
        if m.group(name) is not None:
            return m.group(name), m.start(name), m.end(name), True
    value, start = m.group("v"), m.start("v")
    while value and (value[-1] in ".,;:'\"" or _CLOSERS.get(value[-1], value[-1]) not in value):
        value = value[:-1]  # a closing bracket stays only when the value opened it: Pa(ss)
    return value, start, start + len(value), False


def _is_code_or_placeholder(value: str) -> bool:
    return bool(
        value.lower() in _NOT_A_VALUE
        or keyword.iskeyword(value)
        or value[0] in "\"'"
        or _PLACEHOLDER.fullmatch(value)
        or _CALL.match(value)
        or _ATTRIBUTE.fullmatch(value)
        or _CONTACT.fullmatch(value)
    )


def _password_shaped(value: str) -> bool:
    """What English prose needs before "my password is X" counts: a digit, a symbol (not - _ '), or
    a capital after the first letter; "case-sensitive" and "weak!" do not."""
    core = value.rstrip("!?")
    return any(c.isdigit() or not (c.isalnum() or c in "-_'") for c in core) or any(c.isupper() for c in core[1:])


def _code_name(separator: str, value: str) -> bool:
    """In code an unquoted value is a name, not a password: `if password == stored`,
    `password = getpass_result`, `login(password=new_password)`, `pwd=newPass`."""
    op = separator.strip(" \t*\"'`")
    if op in ("==", ":=", "=>"):
        return True
    plain = op == "=" and not any(c.isdecimal() or c in "!@#$%^&*+?~" for c in value)
    return plain and (" " in separator or "\t" in separator or "_" in value or value[1:] != value[1:].lower())


@functools.lru_cache(maxsize=8)  # asked once per passphrase label of the text being redacted
def _line_ends(text: str) -> tuple[list[int], list[int]]:
    """Where each line of `text` ends: at its newline, and before its trailing spaces and full stops."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    return [s + len(line) for s, line in zip(starts, lines, strict=True)], [
        s + len(line.rstrip(" .。")) for s, line in zip(starts, lines, strict=True)
    ]


def _passphrase(m: re.Match[str]) -> Span | None:
    """An unquoted passphrase after "passphrase:" is the rest of the line, spaces and all, judged on
    its first 1,000 characters (a long line of labels is not read again for each of them)."""
    start = m.start("v")
    ends, kept = _line_ends(m.string)
    end = max(start, kept[bisect.bisect_left(ends, start)])
    judged = m.string[start : min(end, start + 1000)]
    if len(judged) < 4 or _is_code_or_placeholder(judged) or _code_name(m.group("strong"), judged):
        return None
    return start, end


def _password(m: re.Match[str]) -> Span | None:
    if m.group("strong") and m.group("v") and "phrase" in m.group("label").lower():
        return _passphrase(m)
    value, start, end, quoted = _value(m)
    if len(value) < 4 or _is_code_or_placeholder(value):
        return None
    if m.group("bare") is not None:  # 保险箱密码 9527: Chinese labels, values with digits, not 密码 8 位
        chinese = any("\u4e00" <= c <= "\u9fff" for c in m.group("label")) and not _UNIT_NEXT.match(m.string, end)
        return (start, end) if chinese and any(c.isdecimal() for c in value) else None
    if quoted:
        return start, end
    if m.group("weak") is not None and not _password_shaped(value):
        return None
    if m.group("strong") is not None and _code_name(m.group("strong"), value):
        return None
    if _ANNOTATION_NEXT.match(m.string, end):
        return None
    if value.isalpha() and value[1:].islower() and _PROSE_NEXT.match(m.string, end):
        return None  # "password: at least eight characters", "Password: Forgotten again"
    return start, end


def _generic(m: re.Match[str]) -> Span | None:
    value, start, end, _ = _value(m)
    if not _looks_random(value) or _is_code_or_placeholder(value) or _ANNOTATION_NEXT.match(m.string, end):
        return None
    return None if value.startswith(("pk_live_", "pk_test_")) else (start, end)  # publishable: public


def _statement(kind: str, hints: str, label: str, check: Check, value: str = _VALUE) -> _Rule:
    return _Rule(kind, lazy(f"(?P<label>{label}){_CONNECTOR}{value}"), check, tuple(hints.split()))


def _word(words: str) -> str:
    """A label word alone or ending a name: password, db_password, user.password, MYSQL_ROOT_PASSWORD."""
    return rf"(?i:(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9]))"


_PASSWORD_LABEL = _word(r"pass(?:word|wd|phrase|code)|pwd|pgpassword|pass(?=[\"']?=)") + "|密码|密碼|口令"
_GENERIC_LABEL = (
    _word(
        r"secret|token|api[_\-]?key|apikey|access[_\-]?key(?:[_\-]?secret)?|secret[_\-]?key|"
        r"private[_\-]?key|client[_\-]?secret|app[_\-]?(?:secret|key)|signing[_\-]?key|encryption[_\-]?key"
    )
    + r"|(?i:api[ \t]key|access[ \t]token|secret[ \t]key)|密钥|秘钥|私钥|令牌"
)
_AWS_SECRET_LABEL = _word(r"aws[_\-]?secret(?:[_\-]?access)?[_\-]?key|secret[ _\-]?access[ _\-]?key")
_CVV_LABEL = _word(r"cvv2?|cvc2?|security code") + r"码?|(?<![A-Za-z0-9])CSC(?![A-Za-z0-9])|安全码"
_PIN_LABEL = r"(?<![A-Za-z0-9])PIN(?![A-Za-z0-9])(?:[ \t]*(?:code|number))?码?|(?i:pin[ \t]?(?:code|number)|pin码)"
_TWILIO_LABEL = _word(r"twilio[_\- ]?auth[_\- ]?token")
_WHOLE = r"[\"']?(?P<v>{})(?![A-Za-z0-9/+=])"  # a value of a known shape, whole, possibly quoted
_STATEMENTS = [
    _statement("AWS secret key", "secret", _AWS_SECRET_LABEL, _random_value, _WHOLE.format(r"[A-Za-z0-9/+]{40}")),
    _statement("Twilio key", "twilio", _TWILIO_LABEL, _random_value, _WHOLE.format(r"[0-9a-f]{32}")),
    _statement("card security code", "cvv cvc csc security 安全码", _CVV_LABEL, _span, _WHOLE.format(r"\d{3,4}")),
    _statement("PIN", "pin", _PIN_LABEL, _span, _WHOLE.format(r"\d{4,8}")),
    _statement("password", "pass pwd 密码 密碼 口令", _PASSWORD_LABEL, _password),
    _statement("generic secret assignment", "secret token key 密钥 秘钥 私钥 令牌", _GENERIC_LABEL, _generic),
]


def _basic_auth(m: re.Match[str]) -> Span | None:
    try:
        decoded = base64.b64decode(m.group("v"), validate=True)
    except ValueError:  # binascii.Error included
        return None
    return m.span("v") if b":" in decoded else None


def _url_password(m: re.Match[str]) -> Span | None:
    return None if _is_code_or_placeholder(m.group("v")) else m.span("v")


_CARD = lazy(
    r"(?<![0-9A-Za-z_+\-./%])(?:[2-6]\d{12,18}"  # not after %28 in a URL
    r"|[2-6]\d{3}(?P<s>[ \-])\d{4}(?P=s)\d{4}(?P=s)\d{1,4}(?P<tail>(?P=s)\d{1,3})?"
    r"|3\d{3}(?P<s2>[ \-])\d{6}(?P=s2)\d{4,5})"  # American Express and Diners: 4-6-5, 4-6-4
    r"(?![0-9A-Za-z_]|[.,]\d)"
)
# 18 digits with a birth date at 7-14: a Chinese resident ID number (out of scope), not a card.
_RESIDENT_ID = lazy(r"\d{6}(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{4}")
_CARD_WORDS = lazy(r"卡|card|visa|master|amex|unionpay|银联", re.I)
_NOT_CARD_WORDS = lazy(
    r"订单|单号|运单|快递|物流|编号|序列号|流水|交易号|发票|身份证|手机|电话|学号|工号|会员|条码|条形码|"
    r"order|tracking|invoice|serial|isbn|barcode|\bean\b|\bupc\b|phone|mobile|tel\b|\bid\b|\bref|transaction",
    re.I,
)


def _luhn(digits: str) -> bool:
    doubled = (int(c) * (1 + i % 2) for i, c in enumerate(reversed(digits)))
    return sum(d - 9 if d > 9 else d for d in doubled) % 10 == 0


def _card(m: re.Match[str]) -> Span | None:
    start, end = m.span()
    if m.group("tail") is not None and not _luhn("".join(filter(str.isdecimal, m.group()))):
        end = m.start("tail")  # 4111 1111 1111 1111 123: the card, then a security code
    digits = "".join(filter(str.isdecimal, m.string[start:end]))
    if not _luhn(digits) or _RESIDENT_ID.fullmatch(digits):
        return None
    before = m.string[max(0, start - 16) : start]
    not_card = max((w.end() for w in _NOT_CARD_WORDS.finditer(before)), default=-1)
    card = max((w.end() for w in _CARD_WORDS.finditer(before)), default=-1)
    return None if not_card > card else (start, end)  # 订单号 / order no. closer than any mention of a card


_AUTHORIZATION = r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
_BASIC = _AUTHORIZATION + r"(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})"
_BEARER = rf"(?:(?<![A-Za-z0-9])(?i:bearer)|{_AUTHORIZATION}(?i:token))[ \t]+(?P<v>[A-Za-z0-9\-._~+/]{{16,}}=*)"
_URL_PASSWORD = r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@?#]*:(?P<v>[^\s@/?#]+)@(?=[^\s@])"
_SHAPES = [
    _Rule("basic auth credentials", lazy(_BASIC), _basic_auth, ("authorization",)),
    _Rule("bearer token", lazy(_BEARER), _random_value, ("bearer", "authorization")),
    _Rule("connection string password", lazy(_URL_PASSWORD), _url_password, ("://",)),
    _Rule("card number", _CARD, _card),
]

# Priority: unambiguous shapes first, so a key written after a label keeps its provider's name.
_PRIVATE_KEY = _PemRule("private key block", _PEM_BEGIN, _span, ("private key",))
_RULES = [_PRIVATE_KEY, *_PROVIDERS, *_STATEMENTS[:2], *_SHAPES, *_STATEMENTS[2:]]


# Every write runs this and most memories hold no hint at all: one substring test per distinct hint
# picks the rules worth a regular expression scan (half the time of testing rule by rule).
_BY_HINT = {hint: {i for i, rule in enumerate(_RULES) if hint in rule.hints} for r in _RULES for hint in r.hints}
_ALWAYS = {i for i, rule in enumerate(_RULES) if not rule.hints}


def find_secrets(text: str) -> list[Finding]:
    """Every secret in `text`, sorted and non-overlapping; spans index the text as given."""
    folded = text if text.isascii() else text.translate(_FOLD)
    lowered = folded.lower()
    wanted = _ALWAYS.union(*(rules for hint, rules in _BY_HINT.items() if hint in lowered))
    # The spans taken: sorted and apart, so a bisection finds any overlap.
    starts, ends = [m.start() for m in _WITHHELD.finditer(folded)], [m.end() for m in _WITHHELD.finditer(folded)]

    def keep(span: Span) -> bool:
        start, end = span
        i = bisect.bisect_left(starts, end)  # the spans starting before `end`: the last ends latest
        if start >= end or (i > 0 and ends[i - 1] > start):
            return False
        starts.insert(i, start)
        ends.insert(i, end)
        return True

    found = [Finding(r.kind, *span) for r in (_RULES[i] for i in sorted(wanted)) for span in r.spans(folded, keep)]
    return sorted(found, key=lambda f: f.start)


def redact(text: str) -> Redaction:
    """`text` with each secret replaced by `[withheld: kind]`; labels and sentence kept, so
    "密码是 hunter2" becomes "密码是 [withheld: password]"."""
    parts: list[str] = []
    last = 0
    findings = find_secrets(text)
    for f in findings:
        parts += [text[last : f.start], f"[withheld: {f.kind}]"]
        last = f.end
    parts.append(text[last:])
    return Redaction("".join(parts), tuple(dict.fromkeys(f.kind for f in findings)))


def describe(withheld: Sequence[str]) -> str:
    """One sentence for the caller, or "" when nothing was withheld. Counts the entries given
    (kinds, for `Redaction.withheld`; pass every finding's kind to count each secret)."""
    if not withheld:
        return ""
    noun = "secret" if len(withheld) == 1 else "secrets"
    kinds = ", ".join(dict.fromkeys(withheld))
    return f"Withheld {len(withheld)} {noun} ({kinds}): memories never store credentials."
