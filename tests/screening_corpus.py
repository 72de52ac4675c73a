"""A corpus made here, from a seeded random generator (no file copied from anywhere): secrets of
many shapes, each written seven ways (plain, spaced out, zero-width characters inside, full-width,
Cyrillic/Greek look-alikes, base64, hex), and ordinary Chinese, English and mixed sentences that
talk about passwords, tokens, numbers, code, dates, prices, versions, commit hashes and UUIDs.

Every key is fake: the bodies are random, and most carry FAKE or fake. Card numbers are random
digits completed to pass the Luhn check; resident ID numbers are random region codes and birth
dates completed with the ISO 7064 check character.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["OBFUSCATIONS", "Secret", "clean_sentences", "obfuscated", "secrets"]

_ALNUM = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class Secret:
    """`unit` is the self-contained text that gives the secret (a key alone, or a label and its
    value); `value` is the secret inside it; `sentence` holds the unit at {}."""

    family: str
    unit: str
    value: str
    sentence: str

    def text(self, unit: str | None = None) -> str:
        return self.sentence.format(self.unit if unit is None else unit)


def _body(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    """`n` random characters with at least two digits and two letters, as generated keys have."""
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if sum(c.isdigit() for c in s) >= 2 and sum(c.isalpha() for c in s) >= 2:
            return s


def _luhn_complete(partial: str) -> str:
    for check in "0123456789":
        digits = partial + check
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d for i, d in enumerate(int(c) for c in reversed(digits))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _grouped(card: str) -> str:
    return " ".join(card[i : i + 4] for i in range(0, len(card), 4))


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def resident_id(rng: random.Random) -> str:
    region = rng.choice(["110105", "310104", "440305", "330106", "510107", "420111", "320102", "610113"])
    birth = f"{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    first = region + birth + f"{rng.randint(0, 999):03d}"
    return first + "10X98765432"[sum(int(c) * w for c, w in zip(first, _ID_WEIGHTS, strict=True)) % 11]


_WORD_LIST = (
    "correct horse battery staple purple monkey dishwasher orange river castle silver falcon winter garden "
    "marble pencil thunder violet copper lantern meadow harbor crystal shadow"
)
_WORDS = _WORD_LIST.split()
_EN = [
    "Remember this for later: {}",
    "for the staging box, {} (do not share)",
    "Note to self — {} — rotate next month.",
    "the deploy script reads {} from the environment",
]
_ZH = [
    "记一下：{}，别告诉别人",
    "测试环境配置 {} 下周要换",
    "帮我保存 {} 谢谢",
    "上次部署用的是 {}。",
]


def secrets(count: int = 520, seed: int = 20) -> list[Secret]:
    """`count` distinct secrets of about forty shapes, in Chinese and English sentences."""
    rng = random.Random(seed)
    makers: list[Callable[[], tuple[str, str, str]]] = [
        lambda: ("OpenAI key", (v := "sk-proj-" + _body(rng, 48, _ALNUM + "_-")), v),
        lambda: ("OpenAI key", (v := "sk-svcacct-" + _body(rng, 40)), v),
        lambda: ("OpenAI key", (v := "sk-" + _body(rng, 20) + "T3BlbkFJ" + _body(rng, 20)), v),
        lambda: ("Anthropic key", (v := "sk-ant-api03-" + _body(rng, 80, _ALNUM + "_-")), v),
        lambda: ("sk- key", (v := "sk-" + _body(rng, 32, _LOWER)), v),
        lambda: ("GitHub token", (v := rng.choice("pousr").join(["gh", "_"]) + _body(rng, 36)), v),
        lambda: ("GitHub token", (v := "github_pat_" + _body(rng, 22) + "_" + _body(rng, 59)), v),
        lambda: ("GitLab token", (v := "glpat-" + _body(rng, 20, _ALNUM + "_-")), v),
        lambda: ("AWS access key", (v := "AKIA" + _body(rng, 16, string.ascii_uppercase + string.digits)), v),
        lambda: ("AWS secret key", f"aws_secret_access_key={(v := _body(rng, 40, _ALNUM + '/+'))}", v),
        lambda: ("Google API key", (v := "AIza" + _body(rng, 35, _ALNUM + "_-")), v),
        lambda: ("Google OAuth", (v := "GOCSPX-" + _body(rng, 28)), v),
        lambda: ("Slack token", (v := "xoxb-" + f"{rng.randint(10**11, 10**12)}-" + _body(rng, 24)), v),
        lambda: ("Stripe key", (v := rng.choice(["sk_live_", "rk_test_", "sk_test_"]) + _body(rng, 24)), v),
        lambda: ("Twilio key", (v := "SK" + _body(rng, 32, "0123456789abcdef")), v),
        lambda: ("SendGrid key", (v := "SG." + _body(rng, 22) + "." + _body(rng, 43)), v),
        lambda: ("npm token", (v := "npm_" + _body(rng, 36)), v),
        lambda: ("Hugging Face token", (v := "hf_" + _body(rng, 34)), v),
        lambda: ("Alibaba key", (v := "LTAI" + _body(rng, 20)), v),
        lambda: ("Tencent key", (v := "AKID" + _body(rng, 32)), v),
        lambda: ("Telegram token", (v := f"{rng.randint(10**8, 10**9)}:AA" + _body(rng, 33)), v),
        lambda: (
            "JWT",
            (v := "eyJhbGciOiJIUzI1NiJ9.eyJ" + _body(rng, 30, _ALNUM + "_-") + "." + _body(rng, 43, _ALNUM + "_-")),
            v,
        ),
        lambda: (
            "private key",
            (
                v := "-----BEGIN PRIVATE KEY-----\n"
                + "\n".join(_body(rng, 64, _ALNUM + "+/") for _ in range(3))
                + "\n-----END PRIVATE KEY-----"
            ),
            v,
        ),
        lambda: ("card", f"card {(v := _luhn_complete('4' + _digits(rng, 14)))}", v),
        lambda: ("card", f"卡号 {(v := _grouped(_luhn_complete(f'5{rng.randint(1, 5)}{_digits(rng, 13)}')))}", v),
        lambda: (
            "URL credentials",
            f"postgres://app:{(v := _body(rng, 14))}@db.internal:5432/app",
            v,
        ),
        lambda: ("bearer token", f"Authorization: Bearer {(v := _body(rng, 40))}", v),
        lambda: (
            "passphrase EN",
            f"my password is {(v := ''.join(rng.sample(_WORDS, 3)))}",
            v,
        ),
        lambda: ("passphrase EN", f"pw for the NAS is {(v := _body(rng, 8, _ALNUM + '!#%'))}", v),
        lambda: ("passphrase EN", f"the wifi password is {(v := _body(rng, 10))}", v),
        lambda: ("passphrase EN", f"PIN is {(v := str(rng.randint(1000, 9999)))}", v),
        lambda: ("passphrase EN", f"passphrase: {(v := ' '.join(rng.sample(_WORDS, 4)))}", v),
        lambda: ("passphrase ZH", f"我的密码是 {(v := _body(rng, 10))}", v),
        lambda: ("passphrase ZH", f"路由器密码：{(v := _body(rng, 9))}", v),
        lambda: ("passphrase ZH", f"口令：{(v := _body(rng, 8))}", v),
        lambda: ("passphrase ZH", f"密钥：{(v := _body(rng, 12, _ALNUM + '!@#'))}", v),
        lambda: ("passphrase ZH", f"支付密码是{(v := str(rng.randint(100000, 999999)))}", v),
        lambda: ("passphrase ZH", f"银行卡密码 {(v := str(rng.randint(100000, 999999)))}", v),
        lambda: ("national ID", f"身份证号 {(v := resident_id(rng))}", v),
        lambda: ("national ID", (v := resident_id(rng)), v),
        lambda: (
            "national ID",
            f"SSN {(v := f'{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}')}",
            v,
        ),
    ]
    found: dict[str, Secret] = {}
    i = 0
    while len(found) < count:
        family, unit, value = makers[i % len(makers)]()
        sentence = rng.choice(_EN if i % 2 else _ZH)
        found.setdefault(value, Secret(family, unit, value, sentence))
        i += 1
    return list(found.values())


# --- obfuscations ---------------------------------------------------------------------------------

_LOOKALIKES = str.maketrans("aeopcxyiAEOPCXHKMBT", "аеорсхуіАЕОРСХНКМВТ")


def _replace(secret: Secret, value: str) -> str:
    return secret.unit.replace(secret.value, value)


OBFUSCATIONS: dict[str, Callable[[Secret], str]] = {
    "plain": lambda s: s.unit,
    "spaced": lambda s: _replace(s, " ".join(s.value)),
    "zero-width": lambda s: _replace(s, "\u200b".join(s.value)),
    "fullwidth": lambda s: _replace(s, "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s.value)),
    "homoglyph": lambda s: _replace(s, s.value.translate(_LOOKALIKES)),
    "base64": lambda s: base64.b64encode(s.unit.encode()).decode(),
    "hex": lambda s: s.unit.encode().hex(),
}


def obfuscated(secret: Secret, how: str) -> tuple[str, str]:
    """(the unit written `how`, the part of it that must not be kept: the value as written, or the
    whole encoded run)."""
    unit = OBFUSCATIONS[how](secret)
    if how in ("base64", "hex"):
        return unit, unit
    value = secret.value
    if how == "spaced":
        return unit, " ".join(value)
    if how == "zero-width":
        return unit, "\u200b".join(value)
    if how == "fullwidth":
        return unit, "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)
    if how == "homoglyph":
        return unit, value.translate(_LOOKALIKES)
    return unit, value


# --- ordinary sentences ---------------------------------------------------------------------------

_ZH_TALK = [
    "我忘记密码了，明天去营业厅重置。",
    "公司要求密码至少 {n} 位，包含大小写字母和数字。",
    "密码输错 {k} 次账户会被锁定 {m} 分钟。",
    "这个模型的上下文窗口是 {n}k 个 token。",
    "令牌桶算法每秒补充 {k} 个令牌。",
    "订单号 {order} 的快递还没到。",
    "这件外套 {price} 元，打完折 {price2} 元。",
    "我们在 {date} 发布了 v{ver}。",
    "提交 {sha} 修复了登录页的样式。",
    "请求 ID 是 {uuid}，日志里能查到。",
    "会议定在 {date} 下午 {k} 点，{room} 会议室。",
    "孩子 {date} 打疫苗，记得带绿本。",
    "我的密码是弱密码，得改一下。",
    "密钥轮换周期是 {n} 天。",
    "Python {ver} 的 token 模块很少有人用。",
    "银行卡密码和支付密码不要设成一样的。",
    "我的手机壳是 {color} 的。",
    "第 {k} 章讲的是 RSA 和 AES 加密。",
    "版本号从 {ver} 升到了 {ver2}。",
    "把 {path} 里的配置改成 {k} 个线程。",
]
_EN_TALK = [
    "I forgot my password again, resetting it tomorrow.",
    "My password is weak, I should change it this week.",
    "The password must be at least {n} characters long.",
    "The model has a context window of {n}k tokens.",
    "Order {order} shipped on {date}.",
    "The jacket was ${price} and ${price2} after the discount.",
    "We released v{ver} on {date}.",
    "Commit {sha} fixed the flaky login test.",
    "The request id was {uuid}.",
    "Meeting moved to {date} at {k} pm in room {room}.",
    "Use password = input() and never hard-code it.",
    "def login(user, password): return check(user, password)",
    "export DATABASE_URL=${{DATABASE_URL}} in the shell profile",
    "The token bucket refills {k} tokens per second.",
    "Upgrade from {ver} to {ver2} before Friday.",
    "The API key goes in the X-Api-Key header, see the docs.",
    "My PIN is something I never write down.",
    "The build took {k} minutes and {n} seconds.",
    "Set threads to {k} in {path}.",
    "The password is stored as a bcrypt hash.",
]
_MIXED = [
    "明天和 Alice 在 {room} 开 code review，讨论 PR #{k}。",
    "用 pip install requests=={ver} 装依赖，别用最新版。",
    "我们的 OKR 是把 p99 latency 降到 {k}0 ms 以下。",
    "这个 bug 是 commit {sha} 引入的。",
    "password 字段在数据库里是 varchar({n})。",
    "GPT 的 token 计费是每千个 {price} 美元。",
    "快递单号 SF{order}，预计 {date} 送达。",
    "trace id {uuid} 对应的请求超时了。",
    "Docker 镜像 tag 是 {ver}-alpine。",
    "周五 release {ver2}，记得更新 CHANGELOG。",
]


def clean_sentences(count: int = 540, seed: int = 21) -> list[str]:
    """`count` distinct ordinary sentences: about a third each Chinese, English and mixed."""
    rng = random.Random(seed)
    templates = [_ZH_TALK, _EN_TALK, _MIXED]
    found: dict[str, None] = {}
    i = 0
    while len(found) < count:
        template = rng.choice(templates[i % 3])
        values = {
            "n": rng.randint(6, 64),
            "k": rng.randint(2, 12),
            "m": rng.randint(5, 60),
            "order": str(rng.randint(10**13, 10**14)),
            "price": f"{rng.randint(10, 999)}.{rng.randint(0, 99):02d}",
            "price2": f"{rng.randint(5, 500)}",
            "date": f"{rng.randint(2020, 2027)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "ver": f"{rng.randint(0, 5)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
            "ver2": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}",
            "sha": "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([7, 40]))),
            "uuid": "-".join("".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12)),
            "room": rng.choice(["3A", "B201", "大", "小", "Everest"]),
            "color": rng.choice(["蓝色", "黑色", "透明"]),
            "path": rng.choice(["config/app.yaml", "~/.config/tool.toml", "/etc/app.conf"]),
        }
        found.setdefault(template.format(**values), None)
        i += 1
    return list(found)
