"""One frozen configuration, built once from flags and environment and passed down.

Nothing here touches the file system: paths are computed, never created, so importing the package
or building a `Config` has no side effects.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, ValidationError

from ..argument_errors import problems
from ..errors import InvalidInput
from .parsers import parse_tokens
from .settings import (
    Conversation,
    Env,
    EnvVar,
    Http,
    Lifecycle,
    Limits,
    Markdown,
    Namespace,
    Recall,
    Semantic,
    Settings,
    env_vars,
)
from .urls import is_database_url, redact_url

__all__ = ["APP_NAME", "ENV_VARS", "Config", "default_cache_dir", "default_db_path"]

# The data and cache directories keep the name the project had before it was published as `jiyi`:
# existing users' memories live there.
APP_NAME = "mcp-memory-server"

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Config(Settings):
    """Everything the server, the CLI and the benchmarks need to know, in one place: where the
    memories live and whose they are, then one group per concern."""

    db_path: Annotated[
        Path,
        Env(
            "MCP_MEMORY_DB",
            "Path of the SQLite database file (created if missing), or a postgresql:// URL (the postgres extra).",
            str,
            "platform data dir/mcp-memory-server/memory.db",
        ),
    ]  # the SQLite file; os.devnull when `db_url` names a PostgreSQL database
    cache_dir: Annotated[
        Path,
        Env(
            "MCP_MEMORY_CACHE_DIR",
            "Directory for re-creatable caches (the Chinese segmenter's dictionary).",
            Path,
            "platform cache dir/mcp-memory-server",
        ),
    ]
    db_url: Annotated[str | None, Field(repr=False)] = None  # a postgresql:// URL (it may hold a password)
    busy_timeout_ms: Annotated[int, Field(ge=1)] = 5000
    # The namespace served when a request names none: stdio, HTTP without tokens, the CLI.
    namespace: Annotated[
        Namespace,
        Env(
            "MCP_MEMORY_NAMESPACE",
            "Namespace served over stdio, over HTTP without tokens, and by the CLI; namespaces never see each other.",
        ),
    ] = ""
    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        BeforeValidator(lambda v: v.upper() if isinstance(v, str) else v),
        Env(
            "MCP_MEMORY_LOG_LEVEL",
            "Log level of stderr, and the level MCP clients get log messages at until they choose one.",
        ),
    ] = "INFO"
    limits: Limits = Field(default_factory=Limits)
    recall: Recall = Field(default_factory=Recall)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    http: Http = Field(default_factory=Http)
    conversation: Conversation = Field(default_factory=Conversation)
    markdown: Markdown = Field(default_factory=Markdown)
    embedding: Semantic = Field(default_factory=Semantic)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        """Build from `MCP_MEMORY_*` variables; keyword overrides (flags, by setting name, such as
        `db_path` or `stateless_http`) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        given: dict[str, tuple[EnvVar, str]] = {}  # setting path -> its variable and text, for messages
        for var in ENV_VARS:
            raw = env.get(var.name)
            if raw is None or raw.strip() == "":
                continue
            text = raw.strip()
            try:
                value = var.parse(text) if var.parse is not None else text
            except ValueError as exc:
                raise InvalidInput(
                    f"{var.name}={_shown(var, text)} is not valid: {_withheld(var, text, str(exc))}"
                ) from None
            _put(values, var.path, value)
            given[var.path] = (var, text)
        for name, value in overrides.items():
            if value is not None:
                _put(values, _PATHS.get(name, name), value)
        http = values.get("http", {})
        if isinstance(http.get("tokens"), str):  # bare tokens belong to the namespace configured above
            http["tokens"] = parse_tokens(http["tokens"], values.get("namespace", ""))
        values.setdefault("db_path", default_db_path(env))
        if is_database_url(str(values["db_path"])):
            values["db_url"] = str(values["db_path"])
            values["db_path"] = os.devnull
        values.setdefault("cache_dir", default_cache_dir(env))
        values["db_path"] = Path(values["db_path"]).expanduser().resolve()
        values["cache_dir"] = Path(values["cache_dir"]).expanduser().resolve()
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            raise _invalid(error, given) from None

    def with_changes(self, **changes: Any) -> Config:
        """A copy with some settings replaced, by name (`max_page=3`), checked as a new one."""
        values: dict[str, Any] = {}
        for name, value in self:
            values[name] = dict(value) if name in _GROUPS else value
        for name, value in changes.items():
            _put(values, _PATHS.get(name, name), value)
        try:
            return type(self).model_validate(values)
        except ValidationError as error:
            raise _invalid(error, {}) from None

    @property
    def database(self) -> str:
        """Where the memories live, for logs and messages: the file, or the URL without password."""
        return redact_url(self.db_url) if self.db_url is not None else str(self.db_path)

    @property
    def database_name(self) -> str:
        """The database's name alone (no directory, host or user): the file or database name."""
        if self.db_url is None:
            return self.db_path.name
        return urlsplit(self.db_url).path.strip("/") or "postgresql"


ENV_VARS: tuple[EnvVar, ...] = tuple(env_vars(Config))
# The groups of settings, and each setting's place by its name alone (flags and `with_changes` name
# settings, not groups): the names are unique across the groups.
_GROUPS = {
    n for n, i in Config.model_fields.items() if isinstance(i.annotation, type) and issubclass(i.annotation, Settings)
}
_PATHS: dict[str, str] = {}
for _group in _GROUPS:
    for _name in getattr(Config.model_fields[_group].annotation, "model_fields", {}):
        assert _name not in _PATHS, _name
        assert _name not in Config.model_fields, _name
        _PATHS[_name] = f"{_group}.{_name}"
_PATHS.update({"markdown_language": "markdown.language", "markdown_limit": "markdown.limit"})


def _put(values: dict[str, Any], path: str, value: Any) -> None:
    *groups, name = path.split(".")
    for group in groups:
        values = values.setdefault(group, {})
    values[name] = value


def _shown(var: EnvVar, text: str) -> str:
    # A secret, or a database URL's password, never reaches a message.
    return "(value withheld)" if var.secret else repr(redact_url(text))


def _withheld(var: EnvVar, text: str, reason: str) -> str:
    return reason.replace(repr(text), _shown(var, text)).replace(text, _shown(var, text))


def _invalid(error: ValidationError, given: Mapping[str, tuple[EnvVar, str]]) -> InvalidInput:
    """One sentence per failed setting, naming its variable when one set it."""
    sentences = []
    for detail in error.errors(include_url=False):
        path = ".".join(str(p) for p in detail["loc"])
        source = next((given[p] for p in given if path == p or path.startswith(p + ".")), None)
        one = ValidationError.from_exception_data(error.title, [detail])  # type: ignore[list-item]
        if source is None:
            sentences.append(problems(one))
        else:
            var, text = source
            # A secret's value is not echoed: the rule alone.
            told = problems(one).replace(text, redact_url(text)) if not var.secret else problems(one).split(" (got ")[0]
            sentences.append(f"{var.name}={_shown(var, text)} is not valid: {told}")
    return InvalidInput("; ".join(sentences))


def _data_home(env: Mapping[str, str]) -> Path:
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _cache_home(env: Mapping[str, str]) -> Path:
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The platform data directory's `mcp-memory-server/memory.db`."""
    return _data_home(os.environ if env is None else env) / APP_NAME / "memory.db"


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where derived, re-creatable files (the segmenter's dictionary cache) live."""
    return _cache_home(os.environ if env is None else env) / APP_NAME
