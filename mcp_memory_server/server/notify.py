"""Change notifications: when memories change, MCP clients are told which resources to read again.

The store tells its `on_change` listeners what each commit changed (`Change`: memories, their
categories and sessions, whether memories appeared or went away). `Notifier.run` turns that into
`notifications/resources/list_changed` and `notifications/resources/updated` for the resources
that show it, and delivers them in a task of its own: a write never waits for a client.

Both protocol eras of the SDK:

- 2026-07-28 clients open a `subscriptions/listen` stream with a filter (resource list changes,
  resource URIs). The SDK serves it (`ListenHandler`, registered by `MCPServer`) from a
  `SubscriptionBus`; the notifier publishes every event on that bus and the SDK delivers to each
  stream what its filter asks for.
- Handshake-era clients subscribe with `resources/subscribe` / `resources/unsubscribe` (handled
  here, per connection) and get resource list changes on their connection. `initialize`
  advertises `resources.subscribe` and `resources.listChanged`.

Stateless HTTP (`MCP_MEMORY_STATELESS`) has no handshake-era connection that outlives a request,
so nothing could be delivered on one: `initialize` advertises neither `resources.subscribe` nor
`resources.listChanged`, and `resources/subscribe` is refused with a message that says why.
2026-07-28 listen streams work as before, each on the replica that serves it.

Only this process's writes are reported; another server process on the same database tells its
own clients about its own writes. A client hears only of its own namespace's changes: listen
streams and handshake-era connections are tagged with the namespace of the request that opened
them (its token's, over HTTP with tokens).
"""

# No `from __future__ import annotations`, like the other modules that use the SDK's types.

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..runtime.access import request_namespace
from ..store.changeset import Change
from ..store.rows import memory_id
from ..store.store import Store
from ..store.tx import PROFILE_CATEGORIES

__all__ = ["MARKDOWN", "PROFILE", "STATELESS_SUBSCRIBE", "STATS", "Notifier", "resources_changed"]

log = logging.getLogger(__name__)

STATS = "memory://stats"
MARKDOWN = "memory://MEMORY.md"
PROFILE = "memory://profile"
# The profile is synthesised from these and stored as a memory of category `profile`.
_ABOUT_THE_USER = PROFILE_CATEGORIES | {"profile"}
_SEND_TIMEOUT = 5.0  # seconds a handshake-era client may take to accept one batch of notifications
STATELESS_SUBSCRIBE = (
    "resources/subscribe needs a session, and this server is stateless (MCP_MEMORY_STATELESS): the next "
    "request may reach another replica, so no notification could follow. Read the resource again when "
    "needed, or listen with protocol 2026-07-28 (subscriptions/listen), which hears the writes of the "
    "replica that serves the stream."
)


def resources_changed(change: Change) -> tuple[bool, set[str]]:
    """(whether the resource list may have changed, the URIs of the resources that changed)."""
    uris = {STATS}
    if change.numbers:
        uris.add(MARKDOWN)
        uris.update(f"memory://memories/{memory_id(number)}" for number in change.numbers)
        uris.update(f"memory://categories/{category}" for category in change.categories)
    uris.update(f"memory://sessions/{session}" for session in change.sessions)
    # The profile may cite a memory that went away.
    if change.removed or change.categories & _ABOUT_THE_USER:
        uris.add(PROFILE)
    return change.listing, uris


# The namespace of the request being handled, for the bus: the SDK's listen handler subscribes to
# the bus without telling it who is listening.
_LISTENER_NAMESPACE: ContextVar[str | None] = ContextVar("mcp_memory_server_listener_namespace", default=None)


class _NamespacedBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, with each listener tagged by the namespace of the request that
    subscribed it: `publish_to` reaches one namespace's listen streams only."""

    def __init__(self) -> None:
        super().__init__()
        self._namespaces: dict[Callable[[ServerEvent], None], str | None] = {}

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        namespace = _LISTENER_NAMESPACE.get()

        def tagged(event: ServerEvent) -> None:  # a callable of its own: one stream may subscribe twice
            listener(event)

        self._namespaces[tagged] = namespace
        unsubscribe = super().subscribe(tagged)

        def forget() -> None:
            self._namespaces.pop(tagged, None)
            unsubscribe()

        return forget

    async def publish_to(self, namespace: str, event: ServerEvent) -> None:
        for listener, owner in list(self._namespaces.items()):
            if owner == namespace:
                try:
                    listener(event)
                except Exception:  # one broken stream must not starve the others
                    log.exception("a listen stream failed to take an event")
        await anyio.lowlevel.checkpoint()


class _Pending:
    """Changes not yet delivered, merged: notifications are level triggers ("read it again"), so a
    burst of writes while a slow client is served becomes one notification per resource."""

    def __init__(self) -> None:
        self.listing = False
        self.uris: set[str] = set()
        self.ready = anyio.Event()

    def add(self, listing: bool, uris: set[str]) -> None:
        self.listing |= listing
        self.uris |= uris
        self.ready.set()

    def take(self) -> tuple[bool, set[str]]:
        taken = self.listing, self.uris
        self.listing, self.uris, self.ready = False, set(), anyio.Event()
        return taken


class _Peer:
    """A handshake-era connection: the URIs it subscribed to, and what it has yet to be told
    (while a send to it is under way, later changes wait here, merged)."""

    def __init__(self, connection: Connection, namespace: str) -> None:
        self.connection = connection
        self.namespace = namespace
        self.subscribed: set[str] = set()
        self.pending = _Pending()
        self.sending = False


class Notifier:
    """The server's change notifications. `install` it on the server once; `run` it while the
    lifespan's store is open."""

    def __init__(self, default_namespace: str = "", *, stateless: bool = False) -> None:
        self._default = default_namespace
        self._stateless = stateless
        # Passed to MCPServer(subscriptions=...): the bus its `subscriptions/listen` streams read.
        self.bus = _NamespacedBus()
        # Handshake-era connections; each leaves when it closes.
        self._peers: dict[Connection, _Peer] = {}

    def install(self, server: MCPServer[Any]) -> None:
        server.middleware.append(self._track)
        # MCPServer has no API for these two spec methods; the low-level server has. With a
        # `resources/subscribe` handler registered the SDK advertises `resources.subscribe`.
        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)

    async def run(self, store: Store) -> None:
        """Deliver the store's changes until cancelled."""
        pending = _Pending()

        def heard(change: Change) -> None:  # in the writer's call: only note it
            pending.add(*resources_changed(change))

        store.on_change.append(heard)
        try:
            async with anyio.create_task_group() as sending:
                while True:
                    await pending.ready.wait()
                    listing, uris = pending.take()
                    try:
                        await self._deliver(store.namespace, listing, uris, sending)
                    except Exception:  # notifications are advisory: the next change is delivered anyway
                        log.exception("change notifications could not be delivered")
        finally:
            store.on_change.remove(heard)

    async def _deliver(self, namespace: str, listing: bool, uris: set[str], sending: anyio.abc.TaskGroup) -> None:
        events: list[ServerEvent] = [ResourcesListChanged()] if listing else []
        events += [ResourceUpdated(uri=uri) for uri in sorted(uris)]
        for event in events:
            # Each listen stream buffers what its filter admits; publishing never waits for a client.
            await self.bus.publish_to(namespace, event)
        for peer in list(self._peers.values()):
            if peer.namespace != namespace:
                continue
            wanted = uris & peer.subscribed
            if peer.connection.initialized.is_set() and (listing or wanted):
                peer.pending.add(listing, wanted)
                if not peer.sending:  # else the send under way takes it next
                    peer.sending = True
                    sending.start_soon(self._send, peer)

    @staticmethod
    async def _send(peer: _Peer) -> None:
        """Tell one handshake-era client, in a task of its own: a client that stops reading delays
        only its own notifications, and loses those that wait longer than `_SEND_TIMEOUT`."""
        try:
            while peer.pending.listing or peer.pending.uris:
                listing, uris = peer.pending.take()
                with anyio.move_on_after(_SEND_TIMEOUT) as scope:
                    try:
                        if listing:
                            await peer.connection.send_resource_list_changed()
                        for uri in sorted(uris):
                            await peer.connection.send_resource_updated(uri)
                    except Exception:  # a broken connection; it leaves when the SDK closes it
                        log.exception("could not notify a client of changed resources")
                if scope.cancelled_caught:
                    log.warning("a client took over %s s to accept change notifications; dropped", _SEND_TIMEOUT)
        finally:
            peer.sending = False

    # ---- handshake-era connections ----------------------------------------------------------

    def _connection(self, ctx: ServerRequestContext[Any, Any]) -> Connection | None:
        """The request's connection when it is a handshake-era one (registered on first sight).
        2026-07-28 requests each get a connection of their own and are served through the bus."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or self._stateless:
            return None
        # The SDK offers handlers no public way to the connection yet (its request context names
        # it only inside the per-request session); the connection's exit stack is where the SDK
        # expects per-connection teardown.
        connection = getattr(ctx.session, "_connection", None)
        if not isinstance(connection, Connection):
            return None
        if connection not in self._peers:
            self._peers[connection] = _Peer(connection, self._namespace(ctx))
            connection.exit_stack.callback(self._peers.pop, connection, None)
        return connection

    def _namespace(self, ctx: ServerRequestContext[Any, Any]) -> str:
        namespace = request_namespace(ctx.request)
        return self._default if namespace is None else namespace

    async def _track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: remembers handshake-era connections (they get resource list changes), tags
        listen streams with the request's namespace, and adds `listChanged` to the resources
        capability `initialize` reports, which the SDK only sets from options its transports
        never pass."""
        self._connection(ctx)
        token = _LISTENER_NAMESPACE.set(self._namespace(ctx))
        try:
            result = await call_next(ctx)
        finally:
            _LISTENER_NAMESPACE.reset(token)
        if ctx.method == "initialize" and isinstance(result, dict):
            resources = result.get("capabilities", {}).get("resources")
            if isinstance(resources, dict):
                if self._stateless:
                    resources["subscribe"] = False  # the handler is there only to say why not
                else:
                    resources["listChanged"] = True
        return result

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        if self._stateless:
            raise MCPError(INVALID_REQUEST, STATELESS_SUBSCRIBE)
        connection = self._connection(ctx)
        if connection is not None:
            self._peers[connection].subscribed.add(params.uri)
        return EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        connection = self._connection(ctx)
        if connection is not None:
            self._peers[connection].subscribed.discard(params.uri)
        return EmptyResult()
