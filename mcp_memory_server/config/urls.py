"""Where the memories live, as given by `--db`: a SQLite file path or a PostgreSQL URL, and how a
URL is shown to people (without its password)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["is_database_url", "redact_url"]

_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_PASSWORD_PARAMETER = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)


def is_database_url(value: str) -> bool:
    """Whether `--db` names a PostgreSQL database (`postgresql://...`) rather than a file."""
    return bool(_URL.match(value))


def redact_url(url: str) -> str:
    """`url` without its password (in the user part or a `password=` parameter), for logs,
    messages and statistics; any other text as it is."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL one can take apart
        return "postgresql://(withheld)" if is_database_url(url) else url
    if password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    query = _PASSWORD_PARAMETER.sub(r"\1***", parts.query)
    return urlunsplit(parts._replace(query=query)) if password is not None or query != parts.query else url
