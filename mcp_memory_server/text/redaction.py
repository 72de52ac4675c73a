"""Secret detection for every write path: memories never store credentials (SPEC 4).

Rules run in priority order and the first to claim a span keeps it, so `password: sk-proj-...` is
reported as an OpenAI key. Shapes are secrets wherever they appear: provider key prefixes, PEM
private key blocks, JWTs, Luhn-valid card numbers, IBANs, `user:password@` in URLs, Authorization
headers; a card or account number named as such (银行卡号, account number) whatever its checksum.
Statements name a secret and give its value (密码是 hunter2, `pwd=...`, `api_key: ...`): only the
value is withheld, and only when it looks like one, because ordinary memories talk about passwords
and tokens all the time (我忘记密码了, `def login(user, password):`, `password = input()`). In
English prose "my password is X" (pw, passcode, PIN) gives X when X has a digit, a symbol or an inner
capital, or is one lower-case word of four letters or more that does not describe the password
(text/value_words.py: "tiger" and "correcthorsebattery" are one, "weak", "expired" and "there" are not).

Not withheld here, as they are not credentials: Stripe publishable keys, Twilio Account SIDs,
e-mail addresses, order numbers, one-time codes. National ID and phone numbers (personal data) are
found by text/numbers.py and masked, refused or kept by text/screening.py as
`MCP_MEMORY_PERSONAL_NUMBERS` says; so are obfuscated secrets, by running this detector over the
views of text/obfuscation.py. Still missed: a lower-case English password of three letters or fewer
("my password is cat") and a key split across two memories.
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
from .numbers import CARD, PERSONAL_KINDS, card
from .value_words import DESCRIPTIONS, KEY_KINDS, NOT_A_VALUE

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
        value.lower() in NOT_A_VALUE
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


_DESCRIPTION_ENDINGS = ("ed", "ly", "ing", "ble", "ive", "ful", "ous", "ent", "ant", "less", "ary", "ory", "ical")
_GIVING = lazy(r"(?i:is|was|been|set|changed|updated)\b")  # "password to alice" gives no password


def _passphrase_word(m: re.Match[str], value: str, end: int) -> bool:
    """ "my password is tiger", "my password is correcthorsebattery": one lower-case word of four
    letters or more that ends the clause and is not a description of the password (weak, expired,
    there ...)."""
    word = value.rstrip("!?")
    return (
        word.isascii()
        and word.isalpha()
        and word.islower()
        and len(word) >= 4
        and word not in DESCRIPTIONS
        and word not in NOT_A_VALUE
        and (len(word) > 14 or not word.endswith(_DESCRIPTION_ENDINGS))  # three words run together: a passphrase
        and _GIVING.search(m.group("weak")) is not None
        and not _PROSE_NEXT.match(m.string, end)
    )


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
    if m.group("weak") is not None and not (_password_shaped(value) or _passphrase_word(m, value, end)):
        return None
    if m.group("strong") is not None and _code_name(m.group("strong"), value):
        return None
    if _ANNOTATION_NEXT.match(m.string, end):
        return None
    if value.isalpha() and value[1:].islower() and _PROSE_NEXT.match(m.string, end):
        return None  # "password: at least eight characters", "Password: Forgotten again"
    return start, end


def _named_secret(m: re.Match[str], value: str) -> bool:
    """密钥：Zx9!kq88wq: after a Chinese label, a value of eight characters or more with letters and
    digits or symbols is the key itself, random-looking or not."""
    return (
        m.group("label")[0] >= "\u4e00"
        and m.group("bare") is None
        and len(value) >= 8
        and any(c.isalpha() for c in value)
        and _password_shaped(value)
        and value.lower() not in KEY_KINDS
        and not any(c.isalpha() and not c.isascii() for c in value)
    )


def _generic(m: re.Match[str]) -> Span | None:
    value, start, end, _ = _value(m)
    if not (_looks_random(value) or _named_secret(m, value)):
        return None
    if _is_code_or_placeholder(value) or _ANNOTATION_NEXT.match(m.string, end):
        return None
    return None if value.startswith(("pk_live_", "pk_test_")) else (start, end)  # publishable: public


def _statement(kind: str, hints: str, label: str, check: Check, value: str = _VALUE) -> _Rule:
    return _Rule(kind, lazy(f"(?P<label>{label}){_CONNECTOR}{value}"), check, tuple(hints.split()))


def _word(words: str) -> str:
    """A label word alone or ending a name: password, db_password, user.password, MYSQL_ROOT_PASSWORD."""
    return rf"(?i:(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9]))"


_PASSWORD_LABEL = _word(r"pass(?:word|wd|phrase|code)|pwd|pw|pgpassword|pass(?=[\"']?=)") + "|密码|密碼|口令"
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
    _statement("password", "pass pw 密码 密碼 口令", _PASSWORD_LABEL, _password),
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


# Bank card and account numbers named as such (银行卡号 6222 0200 0000 0000 001, "account number
# 12345678", IBAN ...): withheld whatever their checksum, which only an unlabelled card number needs.
# A bare 卡号 right after another word is a membership, transit or library card (会员卡号).
_ACCOUNT_LABEL = (
    r"(?:银行|储蓄|信用|借记|工资)卡(?:卡号|号码?)?|(?<![\u4e00-\u9fff])卡号|(?<=[我的是])卡号|"
    r"(?:银行|开户|收款|对公|汇款|转账)(?:账|帐)(?:号|户)(?:号码?)?|(?:账|帐)户号码?|存折(?:号码?)?|"
    r"(?i:(?<![A-Za-z])(?:(?:bank|debit|credit|savings|checking)[ \t]+)?(?:card|account|acct)[ \t]*"
    r"(?:number|no\.?|num|#)|(?<![A-Za-z])(?:iban|routing[ \t]+number|sort[ \t]+code|bsb)(?![A-Za-z]))"
)
_ACCOUNT = (
    rf"(?:{_ACCOUNT_LABEL})[^\dA-Z\n]{{0,10}}"
    r"(?P<v>[A-Z]{2}\d{2}(?:[ \-]?[A-Z0-9]{4}){2,7}(?:[ \-]?[A-Z0-9]{1,3})?|\d{2,34}(?:[ \-]\d{2,8}){0,6})"
    r"(?![0-9A-Za-z])"
)
_IBAN = r"(?<![A-Za-z0-9])(?P<v>[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?)(?![A-Za-z0-9])"


def _account(m: re.Match[str]) -> Span | None:
    """A labelled account number: six digits or more (an IBAN by its shape)."""
    value = m.group("v")
    return m.span("v") if value[:1].isalpha() or sum(c.isdigit() for c in value) >= 6 else None


# The countries that issue IBANs (ISO 13616's registry): a parcel number such as SF2682… is not one.
_IBAN_COUNTRY_CODES = (
    "AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE GI GL GR GT HR HU IE "
    "IL IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU NI NL NO OM PK PL PS PT QA RO RS RU SA SC "
    "SD SE SI SK SM SO ST SV TL TN TR UA VA VG XK YE"
)
_IBAN_COUNTRIES = frozenset(_IBAN_COUNTRY_CODES.split())


def _iban(m: re.Match[str]) -> Span | None:
    """An IBAN by its country and check digits (ISO 13616: mod 97 of the rearranged number is 1)."""
    compact = m.group("v").replace(" ", "")
    if compact[:2] not in _IBAN_COUNTRIES:
        return None
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return m.span("v") if 15 <= len(compact) <= 34 and int(number) % 97 == 1 else None


_AUTHORIZATION = r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
_BASIC = _AUTHORIZATION + r"(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})"
_BEARER = rf"(?:(?<![A-Za-z0-9])(?i:bearer)|{_AUTHORIZATION}(?i:token))[ \t]+(?P<v>[A-Za-z0-9\-._~+/]{{16,}}=*)"
_URL_PASSWORD = r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@?#]*:(?P<v>[^\s@/?#]+)@(?=[^\s@])"
_SHAPES = [
    _Rule("basic auth credentials", lazy(_BASIC), _basic_auth, ("authorization",)),
    _Rule("bearer token", lazy(_BEARER), _random_value, ("bearer", "authorization")),
    _Rule("connection string password", lazy(_URL_PASSWORD), _url_password, ("://",)),
    _Rule("card number", CARD, card),
    _Rule(
        "account number",
        lazy(_ACCOUNT),
        _account,
        ("卡", "账", "帐", "存折", "card", "account", "acct", "iban", "routing", "sort", "bsb"),
    ),
    _Rule("account number", lazy(_IBAN), _iban),
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
    kinds = ", ".join(dict.fromkeys(withheld))
    if PERSONAL_KINDS.isdisjoint(withheld):
        noun = "secret" if len(withheld) == 1 else "secrets"
        return f"Withheld {len(withheld)} {noun} ({kinds}): memories never store credentials."
    noun = "item" if len(withheld) == 1 else "items"
    return (
        f"Withheld {len(withheld)} {noun} ({kinds}): memories never store credentials, and personal ID and "
        "phone numbers and amounts of one's own money are masked (MCP_MEMORY_PERSONAL_NUMBERS)."
    )
