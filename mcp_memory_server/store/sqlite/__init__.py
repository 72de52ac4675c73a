"""The embedded SQLite backend (the default): one file, WAL, FTS5, and online backups."""
