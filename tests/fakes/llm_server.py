"""A loopback OpenAI-compatible chat server that tests script per model.

It answers POST `/v1/chat/completions` (the openai SDK with base_url `<url>/v1`) and
`/api/paas/v4/chat/completions` (the zhipuai SDK with base_url `<url>/api/paas/v4`).
One asyncio loop on a background thread serves every connection, so a hundred requests
waiting on latency cost a hundred coroutines, not a hundred OS threads.

    with FakeLLMServer(latency=0.0) as server:
        server.script("glm-4", "hello")                                # always "hello"
        server.script("gpt-x", [Fault.rate_limited(retry_after=1), "ok"])  # 429 once, then "ok" forever
        server.script("judge", lambda body: "A" if "apple" in str(body) else "B")
        server.script("strict", Completion(None, "content_filter"))    # a 200 reply with no content
        server.requests("glm-4")        # request bodies the server received, in order
        server.max_in_flight("gpt-x")   # most concurrent requests seen for that model

Usage in every reply is deterministic: one prompt token per whitespace-separated word of
the request's text parts plus IMAGE_TOKENS per image part; one completion token per word
of the reply.

Standalone (benches run it in its own process so it does not share our GIL):
    python -m tests.fakes.llm_server --port 0 --latency 0.1 --reply "ok"
prints `http://127.0.0.1:PORT` on its first line, then serves until killed; GET /fake/stats
gives the request count and the most concurrent requests seen.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Callable, Union

IMAGE_TOKENS = 85
CHAT_PATHS = {"/v1/chat/completions": "openai", "/api/paas/v4/chat/completions": "zhipuai"}
BASE_PATHS = {"openai": "/v1", "zhipuai": "/api/paas/v4"}
STATS_PATH = "/fake/stats"  # GET: {"requests": n, "max_in_flight": m}, for a server in another process
MALFORMED_BODY = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "mess'


@dataclass(frozen=True)
class Fault:
    """A scripted failure. `hang` never answers (the client must time out); `malformed`
    answers 200 with a truncated JSON body; otherwise `status` with `body` (a dict is sent
    as JSON, a str as is; None gives an OpenAI-style error object) and extra `headers`."""

    status: int = 429
    body: dict | str | None = None
    headers: dict[str, str] | None = None
    delay: float = 0.0
    hang: bool = False
    malformed: bool = False

    @classmethod
    def rate_limited(cls, retry_after: float | None = None, **kwargs) -> "Fault":
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
        return cls(status=429, headers=headers, **kwargs)

    @classmethod
    def server_error(cls, status: int = 500, **kwargs) -> "Fault":
        return cls(status=status, **kwargs)

    @classmethod
    def bad_request(cls, message: str = "invalid request", **kwargs) -> "Fault":
        return cls(status=400, body=_error_body(message, "invalid_request_error"), **kwargs)

    @classmethod
    def malformed_body(cls, **kwargs) -> "Fault":
        return cls(status=200, malformed=True, **kwargs)


def _hang(cls, **kwargs) -> Fault:
    return cls(status=200, hang=True, **kwargs)


# Attached after the class body so the dataclass field `hang` keeps its False default:
# `Fault.hang()` is the helper, `fault.hang` (an instance attribute) the flag.
Fault.hang = classmethod(_hang)


@dataclass(frozen=True)
class Completion:
    """A scripted 200 completion with exact content (None is sent as JSON null) and finish_reason,
    e.g. what a provider's content filter returns."""

    content: str | None
    finish_reason: str = "stop"


Reply = Union[str, Fault, Completion]
Script = Union[str, Fault, Completion, list, Callable[[dict], Reply]]


def _error_body(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "code": code}}


def _count_words(value: Any) -> int:
    return len(value.split()) if isinstance(value, str) else 0


def prompt_tokens(body: dict) -> int:
    """The fake's deterministic prompt-token count for a request body."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += _count_words(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":
                    total += IMAGE_TOKENS
                else:
                    total += _count_words(part.get("text"))
    return total


class FakeLLMServer:
    def __init__(self, latency: float = 0.0, *, host: str = "127.0.0.1", port: int = 0, default_reply: Script | None = None):
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._initial_latency = latency
        self._default_reply = default_reply
        self._latency = latency
        self._model_latency: dict[str, float] = {}
        self._scripts: dict[str, Script] = {}
        self._positions: dict[str, int] = {}
        self._records: list[tuple[str | None, dict, dict]] = []
        self._in_flight: dict[str | None, int] = {}
        self._max_in_flight: dict[str | None, int] = {}
        self._serial = 0
        self._connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._latency_changed: asyncio.Event | None = None  # set (and replaced) whenever a latency changes

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "FakeLLMServer":
        self._thread = threading.Thread(target=self._run, name="fake-llm-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            raise self._startup_error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop = self._thread = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._latency_changed = asyncio.Event()
        try:
            server = loop.run_until_complete(
                asyncio.start_server(self._serve_connection, self.host, self.port, backlog=1024, limit=1 << 20)
            )
        except BaseException as exc:  # port taken, bad host: report it to start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self.port = server.sockets[0].getsockname()[1]
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.run_until_complete(self._drop_connections())
            loop.close()

    @staticmethod
    async def _drop_connections() -> None:
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def base_url(self, provider: str) -> str:
        if provider not in BASE_PATHS:
            raise ValueError(f"unknown provider {provider!r}; the fake serves {sorted(BASE_PATHS)}")
        return self.url + BASE_PATHS[provider]

    # ------------------------------------------------------------------ scripting and inspection

    def script(self, model: str, reply: Script) -> None:
        """Script `model`: a str (always), a list (in order, the last repeats) or a callable(body)."""
        if isinstance(reply, list) and not reply:
            raise ValueError("a scripted list needs at least one reply")
        with self._lock:
            self._scripts[model] = reply
            self._positions[model] = 0

    def set_latency(self, seconds: float, model: str | None = None) -> None:
        """Seconds between a request's arrival and its reply, from now on for requests being held
        too: lowered, a held request whose arrival is that long ago is answered at once."""
        with self._lock:
            if model is None:
                self._latency = seconds
            else:
                self._model_latency[model] = seconds
        self._latency_was_set()

    def _latency_was_set(self) -> None:
        def wake() -> None:
            woken, self._latency_changed = self._latency_changed, asyncio.Event()
            woken.set()

        if self._loop is not None:
            self._loop.call_soon_threadsafe(wake)

    async def _wait_latency(self, model: str | None) -> None:
        arrived = asyncio.get_running_loop().time()
        while True:
            with self._lock:
                latency = self._model_latency.get(model, self._latency)
            remaining = arrived + latency - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            try:
                await asyncio.wait_for(self._latency_changed.wait(), remaining)
            except TimeoutError:
                return

    def requests(self, model: str | None = None) -> list[dict]:
        with self._lock:
            return [body for m, body, _ in self._records if model is None or m == model]

    def request_headers(self, model: str | None = None) -> list[dict]:
        """Headers of recorded requests (lower-cased names), in the order of requests()."""
        with self._lock:
            return [dict(headers) for m, _, headers in self._records if model is None or m == model]

    def max_in_flight(self, model: str | None = None) -> int:
        with self._lock:
            return self._max_in_flight.get(model, 0)

    def in_flight(self, model: str | None = None) -> int:
        """Requests being answered now (a dead client's stay until their reply is written)."""
        with self._lock:
            return self._in_flight.get(model, 0)

    def connections_opened(self) -> int:
        """TCP connections accepted so far (a client that pools connections opens few)."""
        with self._lock:
            return self._connections

    def reset(self, *, scripts: bool = False) -> None:
        """Forget recorded requests and in-flight maxima and rewind scripted sequences;
        with scripts=True also forget scripts and per-model latencies."""
        with self._lock:
            self._records.clear()
            self._max_in_flight.clear()
            self._connections = 0
            self._positions = dict.fromkeys(self._scripts, 0)
            if scripts:
                self._scripts.clear()
                self._positions.clear()
                self._model_latency.clear()
                self._latency = self._initial_latency
        if scripts:
            self._latency_was_set()

    def _next_reply(self, model: str | None, body: dict) -> Reply | None:
        with self._lock:
            script = self._scripts.get(model, self._default_reply) if model is not None else None
            if isinstance(script, list):
                position = self._positions.get(model, 0)
                self._positions[model] = position + 1
                return script[min(position, len(script) - 1)]
        if callable(script):
            return script(body)
        return script

    def _enter(self, model: str | None, body: dict, headers: dict) -> None:
        with self._lock:
            self._records.append((model, body, headers))
            for key in (None, model) if model is not None else (None,):
                now = self._in_flight.get(key, 0) + 1
                self._in_flight[key] = now
                self._max_in_flight[key] = max(self._max_in_flight.get(key, 0), now)

    def _leave(self, model: str | None) -> None:
        with self._lock:
            for key in (None, model) if model is not None else (None,):
                self._in_flight[key] -= 1

    # ------------------------------------------------------------------ HTTP

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self._connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, path, _ = (request_line.split(" ", 2) + ["", ""])[:3]
                headers = {}
                for line in header_lines:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    raw = await self._read_chunked(reader)
                else:
                    raw = await reader.readexactly(int(headers.get("content-length") or 0))
                keep_open = await self._answer(method, path.split("?", 1)[0], headers, raw, reader, writer)
                if not keep_open or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the client went away, or the server is stopping
        finally:
            writer.close()

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return b"".join(chunks)
            chunks.append(chunk[:-2])

    async def _answer(self, method, path, headers, raw, reader, writer) -> bool:
        if method == "GET" and path == STATS_PATH:
            with self._lock:
                stats = {"requests": len(self._records), "max_in_flight": self._max_in_flight.get(None, 0)}
            await self._send(writer, 200, stats)
            return True
        if method != "POST" or path not in CHAT_PATHS:
            await self._send(
                writer,
                404,
                _error_body(f"the fake LLM server has no {method} {path}; it serves POST {sorted(CHAT_PATHS)}", "not_found"),
            )
            return True
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            await self._send(writer, 400, _error_body(f"request body is not a JSON object: {exc}", "invalid_request_error"))
            return True
        model = body.get("model") if isinstance(body.get("model"), str) else None
        self._enter(model, body, headers)
        try:
            reply = self._next_reply(model, body)
            await self._wait_latency(model)
            if reply is None:
                await self._send(
                    writer,
                    404,
                    _error_body(
                        f"model {model!r} is not scripted on the fake LLM server; call server.script({model!r}, ...) first",
                        "invalid_request_error",
                        "model_not_found",
                    ),
                )
                return True
            if isinstance(reply, Fault):
                return await self._send_fault(reply, reader, writer)
            if isinstance(reply, Completion):
                completion = self._completion(model, body, reply.content, CHAT_PATHS[path], reply.finish_reason)
            else:
                completion = self._completion(model, body, reply, CHAT_PATHS[path])
            await self._send(writer, 200, completion)
            return True
        finally:
            self._leave(model)

    async def _send_fault(self, fault: Fault, reader, writer) -> bool:
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.hang:
            await reader.read()  # until the client gives up and closes the connection
            return False
        if fault.malformed:
            await self._send(writer, 200, MALFORMED_BODY, fault.headers)
            return True
        body = fault.body
        if body is None:
            reason = HTTPStatus(fault.status).phrase if fault.status in HTTPStatus._value2member_map_ else "error"
            body = _error_body(
                f"scripted fault: {fault.status} {reason}", "server_error" if fault.status >= 500 else "invalid_request_error"
            )
        await self._send(writer, fault.status, body, fault.headers)
        return True

    def _completion(self, model: str, body: dict, text: str | None, provider: str, finish_reason: str = "stop") -> dict:
        with self._lock:
            self._serial += 1
            serial = self._serial
        prompt, completion = prompt_tokens(body), _count_words(text)
        reply = {
            "id": f"chatcmpl-fake-{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
        if provider == "zhipuai":
            reply["request_id"] = f"fake-{serial}"
        return reply

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, body: dict | str | bytes, headers: dict | None = None) -> None:
        if isinstance(body, dict):
            payload = json.dumps(body, ensure_ascii=False).encode()
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = body
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Status"
        lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json", f"Content-Length: {len(payload)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible chat API on loopback.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--reply", default="ok", help="the reply to every model")
    args = parser.parse_args(argv)
    with FakeLLMServer(args.latency, host=args.host, port=args.port, default_reply=args.reply) as server:
        print(server.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
