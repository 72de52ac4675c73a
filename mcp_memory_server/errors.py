"""The errors this package raises, worded for the person or model that reads them.

    MemoryServerError            base of everything below
    ├── InvalidInput             an argument is out of bounds or malformed; nothing was changed
    │   ├── SecretRefused        the content is essentially a secret (password, key, token, card
    │   │                        number); nothing was stored
    │   └── TooLarge             a request or file is over a size limit (HTTP answers 413); the
    │                            message names the limit and the setting that raises it
    ├── NotFound                 a memory id (or other named thing) does not exist
    ├── StoreError               the database could not complete an operation (locked too long,
    │   │                        corrupt, unwritable); nothing was half-applied
    │   └── WriteOutcomeUnknown  the connection to the database was lost while a write was being
    │                            committed: it may or may not have been stored (a retry with the
    │                            same request_id is safe)
    └── CannotListen             the HTTP server could not take its address and port (in use,
                                 not this machine's, not permitted)

Service functions raise these; the MCP layer turns them into `isError` tool results and the CLI
into a one-line message and a non-zero exit status.
"""

from __future__ import annotations

__all__ = [
    "CannotListen",
    "InvalidInput",
    "MemoryServerError",
    "NotFound",
    "SecretRefused",
    "StoreError",
    "TooLarge",
    "WriteOutcomeUnknown",
]


class MemoryServerError(Exception):
    """Base class of every error raised on purpose by the server (jiyi)."""


class InvalidInput(MemoryServerError):
    """An argument is out of bounds or malformed; nothing was changed."""


class SecretRefused(InvalidInput):
    """The content is essentially a secret; memories never store credentials, so nothing was stored."""


class TooLarge(InvalidInput):
    """A request body, or what a file unpacks to, is over a limit; nothing was changed."""


class NotFound(MemoryServerError):
    """The memory (or other named object) does not exist."""


class StoreError(MemoryServerError):
    """The database could not complete the operation; nothing was half-applied."""


class CannotListen(MemoryServerError):
    """The HTTP server could not bind its address and port; nothing was served."""


class WriteOutcomeUnknown(StoreError):
    """The connection to the database was lost after the write's COMMIT was sent: it may have been
    stored whole or not at all (never half), and the server could not find out which."""
