"""Embedding backends for the qa-embed variant (Tu et al. 2024, §4.1): a request's prompt is one text to embed.

They plug into the same dispatch (cache, retries, concurrency) as the text backends: the Completion's
text is the embedding as a JSON list of floats, so a vector is cached like any other answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from harness.calling.backends.base import LocalBackend, MalformedReply, token_count
from harness.calling.backends.description import Description
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.openai_names import default_chat
from harness.config.settings import RunConfig
from harness.inputs import read_json
from harness.scoring.vectors import MAX_TEXT, NOT_A_LIST, TOO_LONG, UNUSABLE, check_vector
from harness.types import Completion, HarnessError, Request, Usage

# One vector of MAX_DIM numbers, as JSON (MAX_TEXT characters at most) and its envelope: a longer reply is refused
# unread, its vector too long.
MAX_REPLY_BYTES = 2 * MAX_TEXT


class OpenAIEmbeddingBackend(OpenAIBackend):
    """OpenAI's embeddings API (text-embedding-ada-002 as in Tu et al., text-embedding-3-*), or a compatible server."""

    name = "openai-embeddings"

    def setup(self) -> None:
        """No decoding fields are sent: --chat, --stop, --reasoning do not apply (`chat` counts for --max-cost)."""
        self.chat = default_chat(self.model, self.api.base_urls)

    @property
    def endpoint(self) -> str:
        return "/v1/embeddings"

    def body(self, request: Request) -> dict[str, Any]:
        """The exact JSON body sent to `endpoint`."""
        return {"model": self.model, "input": [request.prompt]}

    def describe(self) -> dict[str, object]:
        return {"api": "embeddings", "base_urls": sorted(self.base_urls), "deterministic": True}

    def output_budget(self, request: Request) -> int:
        return 0  # embeddings bill input tokens only

    async def served(self) -> list[dict[str, Any]] | None:
        """None: named by address. llama.cpp's /props does not say how its server pools (--pooling mean or cls),
        so two servers of one GGUF may return other vectors (harness/calling/backends/served.py)."""
        return None

    async def send(self, request: Request) -> Completion:
        # Through the SDK's typed create(), not the lean path of the text backends: it asks for base64
        # vectors and decodes them, and qa-embed sends a few thousand requests, not hundreds a second.
        body = self.body(request)
        with self.pool.lease() as route, self.errors(body):
            raw = await route.client.embeddings.with_raw_response.create(**body)
        if len(raw.content) > MAX_REPLY_BYTES:  # never parsed: 4M numbers would take a GB as Python objects
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {TOO_LONG}")
        try:
            json.loads(raw.content)
        except ValueError:  # not JSON (cut off, not UTF-8): a broken delivery, retried
            raise MalformedReply("malformed reply: not JSON") from None
        except RecursionError:
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {NOT_A_LIST}")  # nested too deep
        try:
            response = raw.parse()
        except Exception:  # the SDK could not decode the base64 vector it asked for (a string): paid for, so kept
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {NOT_A_LIST}")
        if not response.data:
            raise MalformedReply("malformed reply: no embedding in the reply")
        tokens = token_count(getattr(response.usage, "prompt_tokens", None))
        usage = Usage(tokens or 0, 0, reported=tokens is not None)
        # Checked at the door (scoring/vectors.py): a vector that cannot be used is kept as a malformed answer with
        # its reason code, cached as paid for and never bought again, and the item says why it has no prediction.
        vector = check_vector(getattr(response.data[0], "embedding", None))
        if isinstance(vector, str):
            return Completion(request.id, "", usage=usage, malformed=f"{UNUSABLE}: {vector}")
        return Completion(request.id, json.dumps(vector), usage=usage)


CHUNK_BATCHES = 8  # batches encoded between two yields


POOLING_CONFIG_BYTES = 1 << 16  # a folder's modules.json and its Pooling config.json: a few hundred bytes each


def folder_pooling(model: str) -> str | None:
    """How a local sentence-transformers folder pools its tokens, from its modules.json and its Pooling module's
    config (mean, cls, lasttoken, ...); "own" where it has no Pooling module (a model pooling in its own code, as
    NV-Embed-v2's latent attention); None for a hub id or a folder that does not say."""
    folder = Path(model).expanduser()
    if not (folder / "modules.json").is_file():
        return None
    try:
        modules = read_json(folder / "modules.json", "modules.json", POOLING_CONFIG_BYTES)
        pooling = [m for m in modules if str(m.get("type", "")).endswith("Pooling")]
        if not pooling:
            return "own"
        config = read_json(folder / pooling[0]["path"] / "config.json", "pooling config", 1 << 16)
    except (HarnessError, ValueError, TypeError, AttributeError, KeyError):
        return None
    if isinstance(config.get("pooling_mode"), str):  # sentence-transformers 6
        return str(config["pooling_mode"])
    modes = [k.removeprefix("pooling_mode_") for k, on in config.items() if k.startswith("pooling_mode_") and on]
    names = {"mean_tokens": "mean", "cls_token": "cls", "max_tokens": "max"}
    return "+".join(names.get(m, m) for m in modes) or None


class SentenceTransformerBackend(LocalBackend):
    """A local sentence-transformers model (a directory or hub id), all texts encoded in one call. A request's
    `unpooled` instruction part is given to encode() as its prompt, and the Pooling module leaves the prompt's
    tokens out (`include_prompt` False): only the text's tokens are pooled, the instruction steering their
    attention (Zhang et al. 2025 §3.1)."""

    name = "sentence-transformers"

    def __init__(self, model: str, batch_size: int | None = None, trust_remote_code: bool = False) -> None:
        self.model = model
        self.batch_size = batch_size or 64
        self.trust_remote_code = trust_remote_code
        self._encoder: object | None = None

    @classmethod
    def from_config(cls, config: RunConfig, line: Description) -> SentenceTransformerBackend:
        return cls(config.model, config.local.batch_size, config.local.trust_remote_code)

    def _load(self) -> object:
        if self._encoder is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise HarnessError(
                    'the qa-embed variant with a local model needs sentence-transformers: pip install -e ".[embed]"'
                ) from None
            try:
                # Never runs a folder's own code unless asked (--trust-remote-code): a model that needs it fails here
                self._encoder = SentenceTransformer(self.model, trust_remote_code=self.trust_remote_code)
            except Exception as e:  # a missing directory, no hub access, a broken checkpoint, code not trusted
                hint = ""
                if not self.trust_remote_code and "trust_remote_code" in str(e):
                    hint = " (the folder runs its own code: pass --trust-remote-code if you trust it)"
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise HarnessError(f"cannot load sentence-transformers model {self.model!r}: {first}{hint}") from None
        return self._encoder

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"engine": self.name, "normalize": False, "deterministic": True}
        if self.trust_remote_code:  # only when set: the keys of every run before it existed stay the same
            out["trust_remote_code"] = True
        return out

    def _encode(self, encoder: object, requests: Sequence[Request]) -> list[Any]:
        """Vectors of requests sharing one instruction part: given as the prompt, left out of pooling."""
        prefix = requests[0].prompt[: requests[0].unpooled]
        texts = [r.prompt[r.unpooled :] for r in requests]
        if not prefix:
            return list(encoder.encode(texts, batch_size=self.batch_size))  # type: ignore[attr-defined]
        from sentence_transformers.sentence_transformer.modules import Pooling

        pooling = next((m for m in encoder if isinstance(m, Pooling)), None)  # type: ignore[attr-defined]
        if pooling is None:
            raise HarnessError(
                f"{self.model} has no Pooling module to leave the instruction out of (it pools in its own code): "
                "pass --case-pooling whole"
            )
        was = pooling.include_prompt
        encoder.set_pooling_include_prompt(False)  # type: ignore[attr-defined]
        try:
            return list(encoder.encode(texts, prompt=prefix, batch_size=self.batch_size))  # type: ignore[attr-defined]
        finally:
            encoder.set_pooling_include_prompt(was)  # type: ignore[attr-defined]

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        encoder = self._load()
        if self.on_work is not None:
            self.on_work()  # loaded: the bar's estimate counts from here (harness/calling/progress.py)
        # Requests that share an instruction part are encoded together (encode() takes one prompt a call): those
        # that pool every token in one run, the condition's own embeddings I(∅) in another.
        groups: dict[str, list[Request]] = {}
        for r in requests:
            groups.setdefault(r.prompt[: r.unpooled], []).append(r)
        # In chunks, each yielded as it is done: the cache keeps what a long run (the CASE protocol embeds tens of
        # thousands of texts) has encoded when it is stopped, and the progress bar moves.
        step = self.batch_size * CHUNK_BATCHES
        pending: list[Request] = []
        for group in groups.values():
            for start in range(0, len(group), step):
                chunk = group[start : start + step]
                for r, v in zip(chunk, self._encode(encoder, chunk), strict=True):
                    yield Completion(r.id, json.dumps([float(x) for x in v]))
                pending += chunk
                if len(pending) >= step:
                    pending = []
                    await asyncio.sleep(0)  # a turn of the event loop: the cache commits, the progress bar moves
        await asyncio.sleep(0)
