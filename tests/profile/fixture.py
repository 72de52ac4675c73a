"""A realistic set of memories about one user (Chinese, English and mixed), with the structure
the sieve and the tools give them (keys, categories, tags), and the profile a model wrote from
them: the rule-based profile is judged side by side with it."""

from __future__ import annotations

from typing import Any

# (content, category, importance, key, tags)
MEMORIES: list[tuple[str, str, float, str | None, list[str]]] = [
    ("我叫陈思远", "identity", 0.95, "user.name", []),
    ("我住在东京", "identity", 0.9, "user.city", []),
    ("I work at Rakuten as a backend engineer", "identity", 0.9, "user.employer", []),
    ("职业是后端工程师，主要写 Go 和 Python", "identity", 0.85, "user.job", ["Go", "Python"]),
    ("我喜欢简单的部署方案，讨厌复杂的 Kubernetes 配置", "preference", 0.8, None, ["部署"]),
    ("I prefer concise answers with code examples", "preference", 0.8, None, []),
    ("回答请用中文，技术名词保留英文", "preference", 0.75, None, []),
    ("决定用 Hugo 搭个人博客，部署在 GitHub Pages", "decision", 0.7, "project.blog", ["Hugo", "博客"]),
    ("Chose PostgreSQL over MySQL for the billing service", "decision", 0.7, None, ["PostgreSQL"]),
    ("品川区1LDK投资评估：表面利回5%，实际利回约4.28%", "fact", 0.7, None, ["不动产投资"]),
    ("大田区的物件比品川区便宜，利回更高", "insight", 0.6, None, ["不动产投资"]),
    ("正在评估品川区的投资物件，关注实际利回", "project_state", 0.7, "project.real_estate", ["不动产投资"]),
    ("Migrating the billing service from Python 2 to Go", "project_state", 0.75, "project.billing", ["Go"]),
    ("周五前提交季度报告", "todo", 0.6, None, []),
    ("Remind me to renew the domain before March 3", "todo", 0.5, None, []),
    ("Oracle Cloud ARM 实例用 nftables，不是 iptables", "fact", 0.6, None, ["Oracle Cloud"]),
    ("I'm fluent in Chinese, Japanese and English", "skill", 0.8, None, []),
    ("熟悉 Linux 服务器运维，管理三台 Ubuntu VPS", "skill", 0.7, None, ["Linux"]),
    ("My manager at Rakuten is Tanaka-san", "relationship", 0.5, None, []),
    ("Go 项目统一用 gofmt 和 golangci-lint", "coding_style", 0.65, None, ["Go"]),
]

# Words a domain must never be: function words and the words that only say what kind of memory
# a sentence is (the old rule-based profile's "domains").
NOT_DOMAINS = {"user", "用户", "喜欢", "日期", "截止", "prefer", "需要", "我", "the", "and", "决定", "正在", "remind"}


def model_answer(ids: dict[str, str]) -> dict[str, Any]:
    """What a model answers to the synthesize_profile prompt for these memories (`ids` maps each
    memory's content to its id)."""

    def cite(*starts: str) -> list[str]:
        return [i for c, i in ids.items() if c.startswith(starts)]

    return {
        "summary": {
            "text": "陈思远是住在东京的后端工程师，在 Rakuten 工作，主要写 Go 和 Python；同时在评估东京的不动产投资。"
            "偏好简单的方案和简洁、带代码的回答。",
            "sources": cite("我叫", "我住在", "I work at", "职业是", "我喜欢", "I prefer"),
        },
        "domains": [
            {"text": "后端开发（Go、Python、PostgreSQL）", "sources": cite("职业是", "Chose", "Migrating")},
            {"text": "日本不动产投资（利回分析、物件评估）", "sources": cite("品川区1LDK", "大田区", "正在评估")},
            {"text": "Linux 服务器运维（Ubuntu、Oracle Cloud）", "sources": cite("熟悉 Linux", "Oracle Cloud")},
        ],
        "high_value_signals": [
            {"text": "投资物件的具体数据：利回、价格、区域比较", "sources": cite("品川区1LDK", "大田区")},
            {"text": "技术决定和部署方案", "sources": cite("决定用 Hugo", "Chose")},
        ],
        "low_value_signals": [{"text": "寒暄和闲聊", "sources": []}],
        "language_preferences": {"text": "中文为主，技术名词保留英文", "sources": cite("回答请用中文")},
        "active_projects": [
            {"text": "billing 服务从 Python 2 迁移到 Go", "sources": cite("Migrating")},
            {"text": "品川区投资物件评估", "sources": cite("正在评估")},
        ],
    }
