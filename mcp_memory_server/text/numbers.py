"""Numbers in text: card numbers (credentials, withheld like every secret) and personal numbers
(national ID and phone numbers: personal data, masked, refused or kept as configured).

Card numbers: 13-19 digits, Luhn-valid, alone or grouped as cards print them, not named as an order,
tracking or ID number right before them.

Personal numbers, what counts and why:
- Chinese resident ID numbers: 18 characters, a region code, a birth date (19xx or 20xx) and a
  valid ISO 7064 check character (0-9 or X). The check digit makes a random 18-digit number (an
  order number, a timestamp) count only once in eleven, and never when its birth date is impossible.
- US Social Security numbers written with dashes (123-45-6789), in the ranges the SSA assigns (no
  000, 666 or 9xx area, no 00 group, no 0000 serial). Undashed nine-digit numbers are anything.
- Phone numbers only where the text says they are one (phone, mobile, tel, 手机, 电话, 联系方式 ...
  within a few characters before), and only mobile numbers: Chinese mobiles (1[3-9] and nine more
  digits, grouped or not, +86 allowed) and international numbers written with + (E.164, 8-15
  digits). A bare eleven-digit number is as often an order number or a QQ number; service and
  landline numbers (400-820-8820) are published for anyone to call.
- Amounts of one's own money (seed 001: financial information is sensitive): an amount after a word
  for pay or savings (月薪三万五, 存款有50万, "my salary is $120k"), or after one for income, a balance
  or a debt said of oneself (我的收入, my mortgage). A price, a budget or a company's revenue is not one.
"""

from __future__ import annotations

import re

from .lazy_pattern import lazy

__all__ = [
    "AMOUNT",
    "CARD",
    "NATIONAL_ID",
    "PERSONAL_KINDS",
    "PHONE",
    "Span",
    "card",
    "luhn",
    "personal_numbers",
]

Span = tuple[int, int]
NATIONAL_ID, PHONE, AMOUNT = "national ID", "phone number", "financial amount"
PERSONAL_KINDS = frozenset({NATIONAL_ID, PHONE, AMOUNT})

CARD = lazy(
    r"(?<![0-9A-Za-z_+\-./%])(?:[2-6]\d{12,18}"  # not after %28 in a URL
    r"|[2-6]\d{3}(?P<s>[ \-])\d{4}(?P=s)\d{4}(?P=s)\d{1,4}(?P<tail>(?P=s)\d{1,3})?"
    r"|3\d{3}(?P<s2>[ \-])\d{6}(?P=s2)\d{4,5})"  # American Express and Diners: 4-6-5, 4-6-4
    r"(?![0-9A-Za-z_]|[.,]\d)"
)
# 18 digits with a birth date at 7-14: a Chinese resident ID number, not a card.
_RESIDENT_ID_SHAPE = lazy(r"\d{6}(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]")
_CARD_WORDS = lazy(r"卡|card|visa|master|amex|unionpay|银联", re.I)
_NOT_CARD_WORDS = lazy(
    r"订单|单号|运单|快递|物流|编号|序列号|流水|交易号|发票|身份证|手机|电话|学号|工号|会员|条码|条形码|"
    r"order|tracking|invoice|serial|isbn|barcode|\bean\b|\bupc\b|phone|mobile|tel\b|\bid\b|\bref|transaction",
    re.I,
)


def luhn(digits: str) -> bool:
    doubled = (int(c) * (1 + i % 2) for i, c in enumerate(reversed(digits)))
    return sum(d - 9 if d > 9 else d for d in doubled) % 10 == 0


def card(m: re.Match[str]) -> Span | None:
    """The card number of a `CARD` match, or None when it is not one."""
    start, end = m.span()
    if m.group("tail") is not None and not luhn("".join(filter(str.isdecimal, m.group()))):
        end = m.start("tail")  # 4111 1111 1111 1111 123: the card, then a security code
    digits = "".join(filter(str.isdecimal, m.string[start:end]))
    if not luhn(digits) or _RESIDENT_ID_SHAPE.fullmatch(digits):
        return None
    before = m.string[max(0, start - 16) : start]
    not_card = max((w.end() for w in _NOT_CARD_WORDS.finditer(before)), default=-1)
    card_word = max((w.end() for w in _CARD_WORDS.finditer(before)), default=-1)
    return None if not_card > card_word else (start, end)  # 订单号 / order no. closer than any mention of a card


# --- personal numbers ---------------------------------------------------------------------------

_RESIDENT_ID = lazy(
    r"(?<![0-9A-Za-z])[1-8]\d{5}(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_SSN = lazy(r"(?<![0-9\-])(?!000|666|9)\d{3}-(?!00)\d\d-(?!0000)\d{4}(?![0-9]|-\d)")
# The label, then at most 12 characters that are not digits, then the number. The gap is bounded,
# so a label is tried once against at most 12 characters.
_PHONE_LABEL = (
    r"(?i:(?<![A-Za-z])(?:phone|mobile|cell(?:phone)?|tel|telephone|whatsapp)(?![A-Za-z]))"
    r"|手机|电话|联系方式|联系电话"
)
_MOBILE = r"(?:\+?86[ \-]?)?1[3-9]\d(?:[ \-]?\d{4}){2}(?![0-9]|-\d)"
# International: + and up to 22 digits, blanks, dashes and brackets, judged in code (8-15 digits).
_INTERNATIONAL = r"\+[1-9][\d \-()]{6,22}"
_PHONE = lazy(rf"(?:{_PHONE_LABEL})[^\d+\n]{{0,12}}(?P<v>{_MOBILE}|{_INTERNATIONAL})")
_TRAILING = " -()"
_PHONE_HINTS = ("phone", "mobile", "cell", "tel", "whatsapp", "手机", "电话", "联系")
# Every number found here has three digits in a row: a text without is left at once.
_DIGITS = lazy(r"\d{3}")


# Pay and savings are one's own whoever says it; income, balances and debts when said of oneself.
_PAY = (
    r"月薪|年薪|周薪|时薪|日薪|工资|薪水|薪资|薪酬|底薪|税前|税后|年终奖|奖金|存款|积蓄|存了|"
    r"(?i:(?<![A-Za-z])(?:salary|salaries|paycheck|wages?|savings|net[ \t]worth|bonus|take[ \t]home)(?![A-Za-z]))"
)
_OWN = (
    r"(?:我|我们|我家|我的|我们的|家里)(?:的|现在的?|目前的?|每月的?|每个月的?|一年的?|税后|税前)?"
    r"(?:收入|余额|资产|负债|房贷|车贷|贷款|欠款|身家|月收入|年收入)|"
    r"(?i:(?<![A-Za-z])(?:my|our)[ \t]+(?:(?:monthly|annual|yearly|current|total|bank|household)[ \t]+)?"
    r"(?:income|balance|debts?|mortgage|loans?)(?![A-Za-z]))"
)
_CN_NUMBER = r"[一二三四五六七八九十两]{1,4}(?:[百千万亿][一二三四五六七八九十两]{0,4}){1,3}"
_FIGURE = r"\d{1,12}(?:,\d{3}){0,4}(?:\.\d{1,2})?"
_UNIT = r"(?:万|千|百万|亿|[kKwWmM](?![A-Za-z]))"
_CURRENCY = r"(?:元|块钱?|人民币|美元|美金|刀|(?i:dollars?|usd|rmb|cny|eur|euros?|pounds?|gbp)(?![A-Za-z]))"
_AMOUNT = lazy(
    rf"(?:{_PAY}|{_OWN})[^\d\n。；;.!?！？]{{0,14}}?"
    rf"(?P<v>(?P<sign>[¥$￥€£][ \t]?)?(?:{_FIGURE}[ \t]?(?P<unit>{_UNIT})?|{_CN_NUMBER})[ \t]?(?P<cur>{_CURRENCY})?)"
)
_AMOUNT_HINTS = (
    "薪",
    "工资",
    "税",
    "奖",
    "存",
    "积蓄",
    "收入",
    "余额",
    "资产",
    "负债",
    "贷",
    "欠款",
    "身家",
    "salar",
    "pay",
    "wage",
    "saving",
    "worth",
    "bonus",
    "home",
    "income",
    "balance",
    "debt",
    "mortgage",
    "loan",
)


def _amounts(text: str) -> list[tuple[str, int, int]]:
    """(AMOUNT, start, end) of each amount of the user's own money: a figure with a currency, a unit
    or three digits, or a Chinese number with 百, 千, 万 or 亿 (月薪三万五)."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _AMOUNT_HINTS):
        return []
    found = []
    for m in _AMOUNT.finditer(text):
        value = m.group("v").rstrip(" \t")
        digits = sum(c.isdigit() for c in value)
        if m.group("sign") or m.group("unit") or m.group("cur") or digits >= 3 or not digits:
            found.append((AMOUNT, m.start("v"), m.start("v") + len(value)))
    return found


def _resident_id(digits: str) -> bool:
    total = sum(int(c) * w for c, w in zip(digits, _ID_WEIGHTS, strict=False))
    return _ID_CHECK[total % 11] == digits[17].upper()


def personal_numbers(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every national ID and phone number and every amount of one's own money in
    `text`, in no particular order."""
    found = _amounts(text)  # 月薪三万五: an amount need not have a digit
    if _DIGITS.search(text) is None:  # every other number here has three digits in a row somewhere
        return found
    for m in _RESIDENT_ID.finditer(text):
        if _resident_id(m.group()):
            found.append((NATIONAL_ID, *m.span()))
    found += [(NATIONAL_ID, *m.span()) for m in _SSN.finditer(text)]
    lowered = text.lower()
    if not any(label in lowered for label in _PHONE_HINTS):
        return found
    for m in _PHONE.finditer(text):
        value = m.group("v").rstrip(_TRAILING)
        start, end = m.start("v"), m.start("v") + len(value)
        digits = sum(c.isdigit() for c in value)
        if 8 <= digits <= 15 and not text[end : end + 1].isdigit():
            found.append((PHONE, start, end))
    return found
