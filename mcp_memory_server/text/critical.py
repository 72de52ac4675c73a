"""Facts a person rarely asks about and must not lose: health (allergies, conditions, medication,
blood type), family, and who they are. Cleanup archives memories unused for a month; an allergy
of one's daughter is needed once a year, and then badly. Cleanup never archives such a memory on
its own (memory/lifecycle.py: the keep rule `critical`); the user can still forget it.

A memory is critical when it names one of the words below (memories of the `identity` category
are kept by the keep rule `core_category` already). The list errs towards keeping: a false match
costs a memory that stays in the store, a miss a fact that quietly leaves the view."""

from __future__ import annotations

import re

__all__ = ["critical"]

_CHINESE = (
    # health
    "过敏",
    "哮喘",
    "糖尿病",
    "高血压",
    "心脏病",
    "癫痫",
    "抑郁",
    "焦虑症",
    "血型",
    "病史",
    "慢性病",
    "手术",
    "怀孕",
    "孕期",
    "处方",
    "用药",
    "吃药",
    "药物",
    "忌口",
    "不能吃",
    "不能喝",
    "医嘱",
    # family
    "女儿",
    "儿子",
    "孩子",
    "妻子",
    "丈夫",
    "老婆",
    "老公",
    "爱人",
    "父亲",
    "母亲",
    "爸爸",
    "妈妈",
    "爷爷",
    "奶奶",
    "外公",
    "外婆",
    "姥姥",
    "姥爷",
    "哥哥",
    "姐姐",
    "弟弟",
    "妹妹",
    "家人",
    # who they are
    "我叫",
    "生日",
    "出生",
    "身份证",
)
_ENGLISH = (
    # health
    r"allerg\w*",
    "asthma",
    r"diabet\w*",
    r"epilep\w*",
    "blood type",
    "medication",
    "medicine",
    r"diagnos\w*",
    "surgery",
    r"pregnan\w*",
    r"prescri\w*",
    r"intoleran\w*",
    "condition",
    # family
    r"daughters?",
    "sons?",
    "wife",
    "husband",
    "partner",
    r"children",
    r"kids?",
    r"mother",
    r"father",
    r"mom",
    r"dad",
    r"sisters?",
    r"brothers?",
    r"grand(?:ma|pa|mother|father|parents?)",
    "family",
    # who they are
    "my name",
    "birthday",
    "born",
)
# Literal alternatives only: one pass over the text, whatever it holds.
_WORDS = re.compile(
    "|".join(map(re.escape, _CHINESE)) + r"|\b(?:" + "|".join(_ENGLISH) + r")\b",
    re.IGNORECASE,
)


def critical(content: str) -> bool:
    """Whether cleanup must leave this memory alone whatever its use (see the module's docstring)."""
    return _WORDS.search(content) is not None
