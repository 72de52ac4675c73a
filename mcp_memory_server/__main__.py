"""`python -m mcp_memory_server`: the same as the `mcp-memory-server` command."""

from .cli import main

raise SystemExit(main())
