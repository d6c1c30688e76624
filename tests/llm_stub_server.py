"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests of the LLM transport.

It answers POST /v1/chat/completions with the given (status, headers, body) replies in
turn, keeps the requests it received, and answers at most `len(replies)` requests: any
further request gets HTTP 599, so a client that retried without bound would be seen.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], bytes]


def completion(text: Any, model: str = "gpt-4-1106-preview", **fields: Any) -> bytes:
    """A chat completion body holding `text` (fields override the defaults)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        **fields,
    }
    return json.dumps(body).encode()


def json_reply(status: int, body: bytes, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, body


class StubLLMServer:
    """Context manager: `base_url` while running; `received` holds request bodies."""

    def __init__(self, *replies: Reply):
        self.replies = list(replies)
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length", 0))
                stub.received.append(json.loads(self.rfile.read(length) or b"{}"))
                stub.headers.append(dict(self.headers))
                if stub.replies:
                    status, headers, body = stub.replies.pop(0)
                else:
                    status, headers, body = 599, {}, b"no more scripted replies"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
