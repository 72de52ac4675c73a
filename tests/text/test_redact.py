"""The secret detector: every secret in the corpus withheld, every ordinary sentence kept whole."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from mcp_memory_server.text import Finding, Redaction, describe, find_secrets, redact
from mcp_memory_server.text import redaction as redact_module

DATA = Path(__file__).parent.parent / "data"
SECRETS: list[dict[str, str]] = json.loads((DATA / "secrets.json").read_text(encoding="utf-8"))
ORDINARY: list[str] = json.loads((DATA / "ordinary.json").read_text(encoding="utf-8"))

# Obviously fake, format-valid keys for the unit tests (the corpus has its own).
GITHUB = "ghp_" + "FAKE" + "0123456789abcdefABCDEFGHIJKLMNOP"
OPENAI = "sk-proj-" + "FAKE_" + "a1B2c3D4e5F6g7H8i9J0" * 2
AWS_ID = "AKIA" + "FAKE" + "2345ABCDEFGH"


def _short(text: str) -> str:
    return text if len(text) < 40 else text[:37] + "..."


def test_corpora_are_large_and_varied() -> None:
    assert len(SECRETS) >= 40
    assert len({s["kind"] for s in SECRETS}) >= 15
    assert len(ORDINARY) >= 320
    assert len(set(ORDINARY)) == len(ORDINARY)
    chinese = [t for t in ORDINARY if any("\u4e00" <= c <= "\u9fff" for c in t)]
    assert 0.35 < len(chinese) / len(ORDINARY) < 0.65


def test_every_kind_the_detector_reports_is_in_the_corpus() -> None:
    kinds = {rule.kind for rule in redact_module._RULES}
    assert kinds == {s["kind"] for s in SECRETS}


@pytest.mark.parametrize("case", SECRETS, ids=[_short(s["text"]) for s in SECRETS])
def test_secret_is_found_and_withheld(case: dict[str, str]) -> None:
    text, secret, kind = case["text"], case["secret"], case["kind"]
    start = text.index(secret)
    covering = [f for f in find_secrets(text) if f.start <= start and start + len(secret) <= f.end]
    assert [f.kind for f in covering] == [kind], find_secrets(text)
    result = redact(text)
    assert secret not in result.text
    assert f"[withheld: {kind}]" in result.text
    assert kind in result.withheld


@pytest.mark.parametrize("text", ORDINARY, ids=[_short(t) for t in ORDINARY])
def test_ordinary_text_is_kept(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == Redaction(text, ())


# --- the shape of the answers ----------------------------------------------------------------------


def test_statements_keep_the_label_and_the_sentence() -> None:
    assert redact("密码是 hunter2").text == "密码是 [withheld: password]"
    assert redact("password: hunter2").text == "password: [withheld: password]"
    assert redact(f"我的GitHub token是{GITHUB}").text == "我的GitHub token是[withheld: GitHub token]"
    assert redact("wifi密码 88886666，客人来了直接给").text == "wifi密码 [withheld: password]，客人来了直接给"


def test_findings_are_sorted_non_overlapping_and_index_the_original_text() -> None:
    text = f"key {OPENAI}; 支付密码：135790; card 4111-1111-1111-1111; id {AWS_ID}"
    findings = find_secrets(text)
    assert [f.kind for f in findings] == ["API key (OpenAI)", "password", "card number", "AWS access key"]
    assert [text[f.start : f.end] for f in findings] == [OPENAI, "135790", "4111-1111-1111-1111", AWS_ID]
    assert all(a.end <= b.start for a, b in pairwise(findings))


def test_full_width_text_is_matched_and_spans_stay_on_the_original() -> None:
    text = "ＷｉＦｉ密码：ｌｉｎ２０２４ｈｏｍｅ"
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == "ｌｉｎ２０２４ｈｏｍｅ"


def test_a_provider_key_keeps_its_name_after_a_generic_label() -> None:
    assert [f.kind for f in find_secrets(f"password: {OPENAI}")] == ["API key (OpenAI)"]
    assert [f.kind for f in find_secrets(f"api_key={GITHUB}")] == ["GitHub token"]


def test_withheld_kinds_are_in_order_and_once_each() -> None:
    result = redact("password: hunter2, pwd=Tr0ub4dor&3, and the token " + GITHUB)
    assert result.withheld == ("password", "GitHub token")
    assert result.text.count("[withheld: password]") == 2


def test_redact_is_idempotent() -> None:
    once = redact(f"密码是 hunter2，token 是 {GITHUB}").text
    assert redact(once) == Redaction(once, ())


def test_describe() -> None:
    assert describe(()) == ""
    assert describe(["password"]) == "Withheld 1 secret (password): memories never store credentials."
    assert describe(["API key (OpenAI)", "password"]) == (
        "Withheld 2 secrets (API key (OpenAI), password): memories never store credentials."
    )
    # Every finding's kind counts every secret; the kinds are still listed once.
    assert describe(["password", "password", "JWT"]).startswith("Withheld 3 secrets (password, JWT):")


def test_finding_is_a_frozen_value() -> None:
    finding = Finding("password", 1, 5)
    assert finding == Finding("password", 1, 5)
    with pytest.raises(AttributeError):
        finding.kind = "PIN"  # type: ignore[misc]


def test_public_names() -> None:
    assert sorted(redact_module.__all__) == ["Finding", "Redaction", "describe", "find_secrets", "redact"]


# --- kinds and decisions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("密码：Abc@2024!", "Abc@2024!"),
        ("登录密码是 hunter22", "hunter22"),
        ("口令为 Tiger#88", "Tiger#88"),
        ("账号密码都是 admin", "admin"),
        ("pwd=hunter2&user=bob", "hunter2"),
        ("Server=db;User Id=sa;Password=Hunter2!;Database=app", "Hunter2!"),
        ('{"password": "hunter2"}', "hunter2"),
        ("password = 'hunter2'", "hunter2"),
        ("if password == 'letmein99':", "letmein99"),
        ("I changed my password to Hunter2024 today", "Hunter2024"),
        ("**Password**: s3cret-Value", "s3cret-Value"),
        ("export PGPASSWORD=pg-2024-x", "pg-2024-x"),
        ("passphrase: correct horse battery staple.", "correct horse battery staple"),
        ("保险箱密码 9527", "9527"),
        ("password=b'Hunter2!'", "Hunter2!"),
        ("my password is correcthorsebattery", "correcthorsebattery"),
        ("my password is sunshine", "sunshine"),
        ("pw for the NAS is Zx9!kq", "Zx9!kq"),
        ("the wifi password is bluebirds, ask me again", "bluebirds"),
    ],
)
def test_password_statements(text: str, value: str) -> None:
    findings = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [("password", value)]


@pytest.mark.parametrize(
    "text",
    [
        "我忘记密码了",
        "I need to reset my password",
        "密码学很有意思",
        "the token bucket algorithm",
        "def login(user, password):",
        "password = input()",
        'os.environ["API_KEY"]',
        "密码是 8 位数字",
        "密码是 SHA256 加密后存的",
        "password: at least eight characters",
        "Password: Forgotten again",
        "password = new_password",
        "password=newPassword",
        "passphrase = user_passphrase",
        "pwd: /home/alice",
        "send the password to alice@example.com",
        "password: none; root_password: ****",
        "密码 2024 年改过",
        "password: bool = False",
        "password: _PasswordType | None = None",
        'password = ":****"',
        "My password is weak, I should change it.",
        "my password is written on a sticky note",
        "the password is too short",
        "send the password to alice",
        "my password is something else",
        "私钥是 ed25519",
        "密钥是 secp256k1 曲线",
    ],
)
def test_password_talk_and_code_are_not_statements(text: str) -> None:
    assert find_secrets(text) == []


def test_a_rejected_statement_does_not_hide_the_next_one() -> None:
    text = "password: none;pwd=hunter2"
    assert [text[f.start : f.end] for f in find_secrets(text)] == ["hunter2"]


def test_pin_and_security_code() -> None:
    assert [f.kind for f in find_secrets("PIN: 4821")] == ["PIN"]
    assert [f.kind for f in find_secrets("PIN码 482193")] == ["PIN"]
    assert [f.kind for f in find_secrets("CVC2 是 0371")] == ["card security code"]
    assert find_secrets("PIN 12") == []
    assert find_secrets("CVV is printed on the back") == []


def test_card_numbers_need_luhn_and_a_card_like_shape() -> None:
    assert [f.kind for f in find_secrets("卡号 4111111111111111")] == ["card number"]
    assert find_secrets("pay with 4111111111111112") == []  # fails Luhn
    # Named as a card or account number, it is withheld whatever its checksum.
    assert [f.kind for f in find_secrets("卡号 4111111111111112")] == ["account number"]
    assert find_secrets("1710489600000 ms") == []  # a timestamp: no card starts with 1
    assert find_secrets("41111111111111111111") == []  # 20 digits
    assert find_secrets("4111 11 111111 11111") == []  # not a card grouping
    assert find_secrets("v4111111111111111") == []


def test_card_number_then_security_code() -> None:
    text = "4111 1111 1111 1111 123"
    assert [text[f.start : f.end] for f in find_secrets(text)] == ["4111 1111 1111 1111"]


def test_numbers_named_as_something_else_are_not_cards() -> None:
    assert find_secrets("订单号 20240315000123") == []  # passes Luhn; an order number
    assert find_secrets("barcode 5901234123457") == []  # an EAN-13 that passes Luhn
    assert [f.kind for f in find_secrets("订单号 123，卡号 20240315000123")] == ["card number"]


def test_chinese_resident_id_numbers_are_not_secrets() -> None:
    # Personal data, not a credential (text/screening.py masks them as configured); 18 digits with
    # a birth date are not taken for a card.
    assert find_secrets("身份证 440301199001011237") == []
    assert find_secrets("440301199001011237") == []


def test_publishable_and_identifier_keys_are_not_secrets() -> None:
    assert find_secrets("pk_live_" + "FAKE" + "a1b2c3d4e5f6g7h8i9j0") == []
    assert find_secrets("stripe token: pk_test_" + "FAKE" + "a1b2c3d4e5f6g7h8i9j0") == []
    assert find_secrets("AC" + "0123456789abcdef" * 2) == []  # Twilio Account SID


def test_provider_prefixes_need_their_full_shape() -> None:
    assert find_secrets("ghp_short") == []
    assert find_secrets("sk-learn and sk-" + "abcdefghijklmnopqrstuvwxyz") == []  # no digits
    assert find_secrets("hf_hub_download(repo_id)") == []
    assert find_secrets("AKIA" + "FAKE") == []


def test_private_key_blocks() -> None:
    body = "\n".join(["MIIEFAKEowIBAAKCAQEA" + "x1Y2z3" * 8] * 3)
    block = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    assert redact(f"key:\n{block}\nend").text == "key:\n[withheld: private key block]\nend"
    truncated = f"-----BEGIN EC PRIVATE KEY-----\n{body}"
    assert [(f.start, f.end) for f in find_secrets(truncated)] == [(0, len(truncated))]
    assert find_secrets("PEM files start with -----BEGIN PRIVATE KEY----- and end with -----END PRIVATE KEY-----") == []


def test_authorization_headers() -> None:
    assert [f.kind for f in find_secrets("Authorization: Basic YWRtaW46aHVudGVyMg==")] == ["basic auth credentials"]
    assert find_secrets("Authorization: Basic SGVsbG8gV29ybGQ=") == []  # "Hello World": no user:password
    assert [f.kind for f in find_secrets("Authorization: token 9f8e7d6c5b4a39281706f5e4d3c2b1a0")] == ["bearer token"]
    assert find_secrets("Authorization: Bearer <token>") == []


def test_connection_strings() -> None:
    text = "amqp://worker:Qz7-FAKE-pass@mq.internal:5672/"
    assert redact(text).text == "amqp://worker:[withheld: connection string password]@mq.internal:5672/"
    assert find_secrets("postgres://user:${DB_PASS}@db/app") == []
    assert find_secrets("http://localhost:8080/@admin") == []


def test_generic_assignments_need_a_random_value() -> None:
    value = "Zq8FAKE3vN7pL2xR9tW4"
    assert [f.kind for f in find_secrets(f"client_secret: {value}")] == ["generic secret assignment"]
    assert [f.kind for f in find_secrets(f"私钥是 {value}")] == ["generic secret assignment"]
    assert find_secrets("token: MY_APP_TOKEN_2024") == []
    assert find_secrets("secret_key = os.getenv('SECRET_KEY')") == []
    assert find_secrets("api_key: prod-api-key-v2") == []
    assert find_secrets("token: 4096") == []
    assert find_secrets("private_key: Ed25519PrivateKey | None = None") == []
    assert find_secrets("signing_key: PKCS7PrivateKeyTypes") == []
    assert [f.kind for f in find_secrets("totp_secret: JBSWY3DPEHPK3PXP")] == ["generic secret assignment"]
