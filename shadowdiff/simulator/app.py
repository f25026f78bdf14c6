"""``build_app(settings)``: the simulator's ASGI application.

Routes are those of ``vllm serve`` 0.34 that shadowdiff touches: the two completion
endpoints, ``/v1/models``, ``/health`` and ``/ping``, ``/version``, ``/load``,
``/metrics``, ``/tokenize`` and ``/detokenize``. Unknown paths and methods answer as
FastAPI does (``{"detail": "Not Found"}``), ``--api-key`` guards only the paths
vLLM guards, and the middlewares are vLLM's, in its order (CORS, then the API key,
then the request id header: ``entrypoints/serve/middleware/register.py``).
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shadowdiff.errors import RequestError
from shadowdiff.simulator import prompts, validation
from shadowdiff.simulator.bodies import error_body
from shadowdiff.simulator.delivery import respond, send_json
from shadowdiff.simulator.engine import Engine
from shadowdiff.simulator.intake import prepare
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.vocabulary import SIMULATOR_HEADER

GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")


class CompletionEndpoint:
    """``POST /v1/chat/completions`` or ``/v1/completions``, as a raw ASGI app."""

    def __init__(self, engine: Engine, *, chat: bool) -> None:
        self.engine = engine
        self.chat = chat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        try:
            job = prepare(self.engine, chat=self.chat, headers=Headers(scope=scope), body=bytes(body))
        except RequestError as exc:
            await send_json(send, exc.status, error_body(exc.message, exc.kind, exc.status, exc.param))
            return
        await respond(self.engine, job, receive, send)


class ApiKeyMiddleware:
    """vLLM's ``--api-key`` check: a Bearer token on the guarded paths only."""

    def __init__(self, app: ASGIApp, keys: tuple[str, ...]) -> None:
        self.app = app
        self._digests = [hashlib.sha256(k.encode()).digest() for k in keys]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] == "OPTIONS"
                or not scope["path"].startswith(GUARDED_PREFIXES)):
            await self.app(scope, receive, send)
            return
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        digest = hashlib.sha256(token.encode()).digest()
        if scheme.lower() == "bearer" and any(secrets.compare_digest(digest, d) for d in self._digests):
            await self.app(scope, receive, send)
            return
        await JSONResponse({"error": "Unauthorized"}, status_code=401)(scope, receive, send)


class RequestIdHeaderMiddleware:
    """``--enable-request-id-headers``: echo ``X-Request-Id`` (or a new one)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        value = Headers(scope=scope).get("x-request-id") or uuid.uuid4().hex

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Request-Id"] = value
            await send(message)

        await self.app(scope, receive, send_with_id)


def _json_request(request: Request, body: bytes) -> Any:
    return validation.parse_json(request.headers.get("content-type"), body)




def build_app(settings: SimulatorSettings) -> Starlette:
    """The simulator as an ASGI app (nothing happens at import time)."""
    engine = Engine(settings)

    async def models(request: Request) -> Response:
        created = int(time.time())   # per request, as vLLM's ModelCard and ModelPermission default it
        data = [{
            "id": name, "object": "model", "created": created, "owned_by": "vllm",
            "root": settings.root, "parent": None, "max_model_len": settings.max_model_len,
            "permission": [{
                "id": f"modelperm-{secrets.token_hex(8)}", "object": "model_permission",
                "created": created, "allow_create_engine": False, "allow_sampling": True,
                "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False,
            }],
        } for name in settings.served_model_names]
        return JSONResponse({"object": "list", "data": data})

    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def version(request: Request) -> Response:
        # (the body is vLLM's; the header tells shadowdiff's own reports that this is a test double)
        return JSONResponse({"version": settings.version}, headers={SIMULATOR_HEADER: "1"})

    async def load(request: Request) -> Response:
        return JSONResponse({"server_load": engine.scheduler.running + engine.scheduler.waiting})

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(engine.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def tokenize(request: Request) -> Response:
        try:
            req = validation.validate(validation.TokenizeRequest, _json_request(request, await request.body()))
            _check_model(req.model)
            if req.messages is not None:
                # rendered as a chat request is, so that the ids agree (tools, thinking off):
                # teacher-forced scoring sends them back with an answer after them
                text = prompts.render_chat([m.model_dump() for m in req.messages],
                                           add_generation_prompt=req.add_generation_prompt,
                                           continue_final_message=req.continue_final_message,
                                           tools=[t.model_dump(exclude_none=True) for t in req.tools or ()],
                                           thinking=not settings.thinks or req.thinking)
            elif req.prompt is not None:
                text = req.prompt
            else:
                raise RequestError("Either `prompt` or `messages` must be given.", param="prompt")
        except RequestError as exc:
            return _error(exc)
        tokens = engine.vocab.encode(text)
        return JSONResponse({
            "count": len(tokens), "max_model_len": settings.max_model_len,
            "tokens": [t.id for t in tokens],
            "token_strs": [engine.vocab.token_text(t.id) for t in tokens] if req.return_token_strs else None,
        })

    async def detokenize(request: Request) -> Response:
        try:
            req = validation.validate(validation.DetokenizeRequest, _json_request(request, await request.body()))
            _check_model(req.model)
            bad = [t for t in req.tokens if t < 0 or t >= engine.vocab.size]
            if bad:
                raise validation.vllm_error(f"Token id {bad[0]} is out of vocabulary", "tokens")
        except RequestError as exc:
            return _error(exc)
        return JSONResponse({"prompt": engine.vocab.decode(req.tokens)})

    def _check_model(model: str | None) -> None:
        if model and model not in settings.served_model_names:
            raise RequestError(
                f"The model `{model}` does not exist. Valid aliases: "
                f"{', '.join(settings.served_model_names)}.",
                status=404, kind="NotFoundError", param="model")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    routes = [
        Route("/v1/chat/completions", CompletionEndpoint(engine, chat=True), methods=["POST"]),
        Route("/v1/completions", CompletionEndpoint(engine, chat=False), methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/ping", health, methods=["GET", "POST"]),
        Route("/version", version, methods=["GET"]),
        Route("/load", load, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/detokenize", detokenize, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    # vLLM's CORS middleware with its defaults (no origin allowed): besides the preflights, it
    # adds ``vary: Origin`` to every response but the API key's 401, whose middleware is outside it
    app.add_middleware(CORSMiddleware, allow_origins=[], allow_credentials=False, allow_methods=["*"],
                       allow_headers=["*"])
    if settings.api_keys:
        app.add_middleware(ApiKeyMiddleware, keys=settings.api_keys)
    if settings.enable_request_id_headers:
        app.add_middleware(RequestIdHeaderMiddleware)
    app.state.engine = engine
    return app


def _error(exc: RequestError) -> Response:
    return JSONResponse(error_body(exc.message, exc.kind, exc.status, exc.param), status_code=exc.status)
