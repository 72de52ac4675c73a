"""`python -m mcp_memory_server`: the same as the `jiyi` command."""

from .cli import main

raise SystemExit(main())
