"""A write call's request_id, chosen by the client so that it can retry the call safely: the
store keeps the first answer with the write (store/ledger.py) and gives it to every retry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInput
from ..store.ledger import Request, fingerprint

__all__ = ["MAX_REQUEST_ID_CHARS", "request"]

MAX_REQUEST_ID_CHARS = 100
_REQUEST_ID = re.compile(rf"[!-~]{{1,{MAX_REQUEST_ID_CHARS}}}")  # visible ASCII (! to ~): no space, no control


def request(tool: str, request_id: str | None, arguments: Mapping[str, Any]) -> Request | None:
    """The ledger's view of a call of `tool` with `arguments` (its values as the client sent them),
    or None when the call carries no request_id."""
    if request_id is None:
        return None
    if not isinstance(request_id, str) or not _REQUEST_ID.fullmatch(request_id):
        shown = repr(request_id[:40]) + ("..." if len(request_id) > 40 else "") if isinstance(request_id, str) else ""
        raise InvalidInput(
            f"request_id {shown} is not valid: use 1-{MAX_REQUEST_ID_CHARS} visible ASCII characters "
            "(letters, digits, punctuation; no spaces), such as a UUID. Nothing was changed."
        )
    return Request(request_id, tool, fingerprint(arguments))
