"""The only place that speaks SQL: the `Store` of one namespace, its transactions (`Tx`), the
rows they read, the schema and its migrations, on SQLite (`sqlite/`, the default) or PostgreSQL
(`postgres/`)."""

from .store import Store
from .tx import Tx

__all__ = ["Store", "Tx"]
