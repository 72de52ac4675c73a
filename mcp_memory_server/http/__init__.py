"""The dashboard: its JSON API over the services and the Starlette app that serves it with its
static page (ui/), beside /mcp or on its own."""
