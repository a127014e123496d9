"""The server's side of the wire: a stdio reader that survives what a client may send, and a
protocol that answers every request.

pygls's reader hands the raw JSON to the protocol's deserializer inside ``json.loads``; a
request whose params do not deserialize then raises out of the reader loop and is never
answered, and pygls shows the user a popup. A header without ``Content-Length`` leaves the
reader looking for one at the start of a line, which after an unframed body it never finds
again. Here a request with bad params is answered ``-32602 InvalidParams``, a body that is
not JSON is logged and skipped, and the reader finds the next ``Content-Length`` header
wherever it starts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from typing import TYPE_CHECKING, Any

from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.protocol import LanguageServerProtocol

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader

log = logging.getLogger("solar_lsp.lsp")

_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)
_HEADER = re.compile(rb"^[A-Za-z][\w-]*:")
MAX_BODY = 256 * 1024**2  # a larger Content-Length is taken for garbage, not waited for


def _cause(exc: BaseException) -> str:
    """The innermost reason a message did not deserialize, in one line."""
    seen = exc.__cause__ or exc
    while True:
        inner = getattr(seen, "exceptions", None)
        if inner:
            seen = inner[0]
        elif seen.__cause__ is not None:
            seen = seen.__cause__
        else:
            return f"{type(seen).__name__}: {seen}"[:300]


def _not_the_deserialization_traceback(record: logging.LogRecord) -> bool:
    """pygls logs a full traceback for each message it cannot deserialize; :meth:`SolarProtocol.
    receive` says the same in one line (and answers the request)."""
    return not str(record.msg).startswith("Unable to deserialize message")


class SolarProtocol(LanguageServerProtocol):
    """pygls's protocol that answers requests it cannot deserialize and drops late replies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(_not_the_deserialization_traceback)

    def receive(self, data: Any) -> None:
        """Handle one decoded JSON message; nothing it contains raises out of here."""
        if not isinstance(data, dict) or data.get("jsonrpc") != self.VERSION:
            self._answer_error(data, JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            return
        if self._shutdown and "method" in data and "id" in data and data["method"] != "exit":
            self._answer_error(data, JsonRpcInvalidRequest("the server is shutting down"))
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            self._reject(data, exc)
            return
        if "method" not in data and self._late_reply(data.get("id")):
            return
        try:
            self.handle_message(message)
        except Exception:  # a bug in dispatch: say so in the log, keep serving
            log.exception("solar-lsp: could not handle %s", data.get("method", "a reply"))

    def _late_reply(self, msg_id: Any) -> bool:
        """A reply to a request of ours that was cancelled meanwhile (a refresh or a progress
        token whose task was superseded): dropped, where pygls would raise InvalidStateError."""
        try:
            fut = self._request_futures.get(msg_id)
        except TypeError:  # an id that cannot be a key
            return True
        if fut is not None and fut.done():
            self._request_futures.pop(msg_id, None)
            return True
        return False

    def _reject(self, data: dict, exc: JsonRpcException) -> None:
        why = _cause(exc)
        method = data.get("method")
        if method is not None and "id" in data:
            self._answer_error(data, JsonRpcInvalidParams(f"invalid params for {method}: {why}"))
        elif method is not None:
            log.warning("solar-lsp: ignored notification %s with invalid params: %s", method, why)
        else:  # a reply of the client's we cannot read: wake whoever waits for it
            log.warning("solar-lsp: could not read the client's reply %r: %s", data.get("id"), why)
            try:
                fut = self._request_futures.pop(data.get("id"), None)
            except TypeError:
                fut = None
            if fut is not None and not fut.done():
                fut.set_exception(exc)

    def _answer_error(self, data: Any, exc: JsonRpcException) -> None:
        msg_id = data.get("id") if isinstance(data, dict) else None
        if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool) and \
                isinstance(data, dict) and "method" in data:
            log.warning("solar-lsp: request %r answered %d: %s", msg_id, exc.code, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
        else:
            log.warning("solar-lsp: ignored a message: %s (%s)", exc.message, str(data)[:200])


async def serve(stop: threading.Event, reader: AsyncReader, protocol: SolarProtocol) -> None:
    """Read LSP messages from ``reader`` until end of input (or ``stop``) and hand them over.

    A message is headers, a blank line, then ``Content-Length`` bytes of JSON. A line that is
    no header is skipped up to a ``Content-Length`` header in it (after a body sent without
    one, the next header follows that body on the same line); a body that is not JSON is
    logged and skipped."""
    length: int | None = None
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            return  # the client closed our input: exit, and it may start us again
        if not line.strip():
            if length is not None:
                body = await reader.readexactly(length)
                if len(body or b"") < length:
                    return  # input ended inside the body
                length = None
                _dispatch(protocol, body)
            continue
        m = _LENGTH.search(line)
        if m is not None:
            if m.start() > 0 or length is not None:
                log.warning("solar-lsp: skipped %d bytes without a message header", m.start())
            n = int(m.group(1))
            length = n if n <= MAX_BODY else None
            if length is None:
                log.warning("solar-lsp: ignored Content-Length %d (over %d)", n, MAX_BODY)
        elif not _HEADER.match(line):  # another header (Content-Type) is fine, in any order
            log.warning("solar-lsp: skipped a line that is no message header: %r", line[:80])
            length = None


def _dispatch(protocol: SolarProtocol, body: bytes) -> None:
    try:
        data = json.loads(body)
    except ValueError as exc:  # also not UTF-8
        log.warning("solar-lsp: ignored a message that is not JSON (%s): %r", exc, body[:120])
        return
    protocol.receive(data)


def run_stdio(stop: threading.Event, reader: AsyncReader, protocol: SolarProtocol) -> None:
    """Serve until the client closes stdin or sends exit."""
    asyncio.run(serve(stop, reader, protocol))
