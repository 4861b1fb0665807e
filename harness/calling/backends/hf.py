"""transformers backend: batched greedy `generate` for models vLLM does not serve (T5, Flan-T5, UL2, Tk-Instruct).

torch and transformers are imported when the backend is built, never by `import harness`. Names in
harness/calling/backends/local_models.py (`smollm2-135m`) resolve to weights a Python package ships, with no network.
With `expected=True` each answer also carries the first output position's score-token probabilities
(harness/scoring/expected.py). With `constrain` (--constrain) the first output token is restricted to the
tokens of the scale's integers and the next one to end-of-sequence (transformers' `prefix_allowed_tokens_fn`):
the reply is the integer greedy decoding prefers among them.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from harness.calling.backends import hf_steps, local_models
from harness.calling.backends.base import LocalBackend
from harness.calling.backends.description import Description, constrain_scale
from harness.calling.backends.thinking import NEVER, Thinking, thinking_record
from harness.config.paper import PAPER, tokenizer_limit, truncation
from harness.config.settings import LocalOptions, RunConfig
from harness.types import Completion, HarnessError, Request, Usage

INSTALL_HINT = 'pip install -e ".[hf]"'
# Auto batch size: start here and halve on CUDA out-of-memory until a batch fits.
START_BATCH_GPU = 64
START_BATCH_CPU = 8


def require_hf() -> tuple[Any, Any]:
    """(torch, transformers), or one line saying what to install."""
    try:
        import torch
        import transformers
    except ImportError as e:
        missing = e.name or "torch/transformers"
        raise HarnessError(
            f"the hf backend needs torch and transformers ({missing} is not installed): {INSTALL_HINT}"
        ) from None
    return torch, transformers


def from_config(config: RunConfig, line: Description) -> HFBackend:
    """The run's model: --model a hub id, local path or packaged name, --scoring expected, --constrain."""
    chat = line.chat_mode(config)
    expected, constrain = config.scoring == "expected", constrain_scale(config)
    truncate = truncation(config.truncate_input, config.model)
    # `paper` on a T5-family model: the loaded tokenizer's own limit, as the reference code's truncation=True
    paper_limit = config.truncate_input == PAPER and truncate is not None
    return HFBackend(
        config.model,
        config.local,
        expected=expected,
        chat=chat,
        thinking=line.reasoning(config),
        constrain=constrain,
        truncate=truncate,
        paper_limit=paper_limit,
        progress=config.progress,
    )


class HFBackend(LocalBackend):
    """One model loaded once per run; prompts sorted by length and generated in padded batches."""

    name = "hf"

    def __init__(
        self,
        model: str,
        options: LocalOptions,
        expected: bool = False,
        chat: bool = False,
        thinking: Thinking | None = None,
        constrain: tuple[int, ...] | None = None,
        truncate: int | None = None,
        paper_limit: bool = False,
        progress: bool = True,
    ) -> None:
        self.model = model
        self.truncate = truncate  # --truncate-input: prompt tokens kept
        # --truncate-input paper: `truncate` is replaced by the tokenizer's model_max_length once it is read
        # (`cut`), with the tokenizer's revision recorded beside it: Flan-UL2's said 512, now 2048.
        self.paper_limit = paper_limit
        self._tokenizer_record: dict[str, object] | None = None
        self.progress = progress  # --no-progress: no bar of ours, none of transformers' either
        self.options = options
        self.expected = expected
        self.chat = chat  # --chat: apply the model's chat template (off: raw text, as the paper sent)
        self.thinking = thinking or NEVER  # harness/calling/backends/thinking.py
        self.constrain = constrain
        self.torch, self.transformers = require_hf()
        # A packaged model (smollm2-135m): checked now (package installed?), converted on first load.
        self._packaged = local_models.weights_identity(model) if local_models.is_known(model) else None
        if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().is_dir():
            raise HarnessError(f"no model directory at {model} (pass a local directory or a hub id)")
        self.batch_size: int | None = options.batch_size  # None until loaded when chosen automatically
        self._loaded: hf_steps.Loaded | None = None

    def describe(self) -> dict[str, object]:
        """What decides the answers (part of the cache key). Throughput knobs such as the batch size are not."""
        record: dict[str, object] = {
            "engine": "transformers",
            "model": self.model,
            "dtype": self.options.dtype,
            "chat_template": self.chat,
            # max_tokens and temperature travel in each Request; greedy is the only decoding here.
            "decoding": "greedy (do_sample=False, num_beams=1), the rest from the model's generation_config",
            "special_tokens": "tokenizer default (T5: </s> appended; GPT-2: none)",
        }
        if self._packaged is not None:
            record["packaged_weights"] = self._packaged
        if self.expected:
            record["score_probs"] = "softmax of the first output position's logits, summed per integer token 0-10"
        if self.paper_limit:  # the tokenizer's own limit and which revision of it said so
            record["tokenizer"] = self.tokenizer_record()
        truncate = self.cut()
        if truncate is not None:  # run_sts_fewshot.py: tokenizer(..., truncation=True), the end cut off
            record["truncate_input"] = truncate
        if self.constrain is not None:
            mechanism = "prefix_allowed_tokens_fn: first token one of the scale's integer tokens, then EOS"
            record["constrain"] = {"mechanism": mechanism, "scale": list(self.constrain)}
        return record | thinking_record(self.thinking)

    def cut(self) -> int | None:
        """Prompt tokens kept: --truncate-input N, or under `paper` the tokenizer's model_max_length."""
        if not self.paper_limit:
            return self.truncate
        limit = self.tokenizer_record()["model_max_length"]
        return limit if isinstance(limit, int) else None

    def tokenizer_record(self) -> dict[str, object]:
        """The tokenizer's stated limit (None: none stated, so `truncation=True` cuts nothing) and its hub revision
        (the commit of the cached snapshot; None for a local folder, which has none)."""
        if self._tokenizer_record is None:
            tf, source = self.transformers, self.source()
            try:
                limit = tokenizer_limit(tf.AutoTokenizer.from_pretrained(source).model_max_length)
                found = tf.utils.cached_file(
                    source, "tokenizer_config.json", _raise_exceptions_for_missing_entries=False
                )
            except (OSError, ValueError, ImportError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise HarnessError(f"cannot load the tokenizer of {self.model!r}: {first}") from None
            revision = tf.utils.extract_commit_hash(found, None) if found else None
            self._tokenizer_record = {"model_max_length": limit, "revision": revision}
        return self._tokenizer_record

    def source(self) -> str:
        """What from_pretrained loads: the converted folder of a packaged model, else the name as given."""
        return str(local_models.model_dir(self.model, log=_note)) if self._packaged is not None else self.model

    def load(self) -> hf_steps.Loaded:
        """Load model and tokenizer once; left padding for decoder-only models, right for encoder-decoder."""
        if self._loaded is not None:
            return self._loaded
        torch, tf = self.torch, self.transformers
        if not self.progress:
            tf.utils.logging.disable_progress_bar()  # transformers' "Loading weights" bar (process-wide)
        source = self.source()
        started = time.perf_counter()
        if self.progress:  # the bar's first move waits for the first batch: say what comes before it
            _note(f"loading {self.model} with transformers ({'GPU' if torch.cuda.is_available() else 'CPU'}) ...")
        try:
            config = tf.AutoConfig.from_pretrained(source)
            encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
            # Deshpande et al. reference code: left padding for GPT-style models, right for T5.
            tokenizer = tf.AutoTokenizer.from_pretrained(source, padding_side="right" if encoder_decoder else "left")
            if self.chat and not getattr(tokenizer, "chat_template", None):
                raise HarnessError(f"--chat: the tokenizer of {self.model!r} has no chat template")
            cls = tf.AutoModelForSeq2SeqLM if encoder_decoder else tf.AutoModelForCausalLM
            kwargs: dict[str, Any] = {"dtype": hf_steps.torch_dtype(torch, self.options.dtype)}
            cuda = torch.cuda.is_available()
            if cuda and hf_steps.has_accelerate():
                kwargs["device_map"] = "auto"  # spread over every visible GPU (and CPU if it must)
            model = cls.from_pretrained(source, **kwargs)
            if cuda and "device_map" not in kwargs:
                model = model.to("cuda")
            model.eval()
        except (OSError, ValueError, ImportError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise HarnessError(f"cannot load {self.model!r} with transformers: {first}") from None
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # as the reference code did for GPT models
        eos = model.generation_config.eos_token_id
        eos_ids = {*(eos if isinstance(eos, list) else [eos]), tokenizer.eos_token_id} - {None}
        max_positions = None
        if not encoder_decoder:
            max_positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        if self.batch_size is None:
            self.batch_size = START_BATCH_GPU if torch.cuda.is_available() else START_BATCH_CPU
        score_tokens = hf_steps.score_tokens(tokenizer) if self.expected or self.constrain is not None else {}
        self._loaded = hf_steps.Loaded(
            model, tokenizer, model.device, encoder_decoder, max_positions, frozenset(eos_ids), score_tokens
        )
        if self.progress:
            _note(
                f"loaded in {time.perf_counter() - started:.0f} s; generating in batches of {self.batch_size} "
                "(the bar moves as each batch finishes)"
            )
        return self._loaded

    def tokenize(self, requests: Sequence[Request]) -> list[hf_steps.Item]:
        """Token ids of each prompt: raw text as the paper sent it, or wrapped in the chat template."""
        tok = self.load().tokenizer
        # The reference code's truncation=True: each prompt cut to its first N tokens (a T5 tokenizer keeps </s>).
        limit = self.cut()
        cut: dict[str, Any] = {"truncation": True, "max_length": limit} if limit is not None else {}
        if self.chat:
            conversations = [[{"role": "user", "content": r.prompt}] for r in requests]
            switch = self.thinking.switch  # Qwen3's enable_thinking; a template without the switch ignores it
            extra = {"enable_thinking": switch} if switch is not None else {}
            texts = [
                tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True, **extra) for c in conversations
            ]
            ids = tok(texts, add_special_tokens=False, **cut)["input_ids"]  # the template already holds them
        else:
            ids = tok([r.prompt for r in requests], **cut)["input_ids"]
        return [hf_steps.Item(r, list(i)) for r, i in zip(requests, ids, strict=True)]

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """Longest prompts first (an out-of-memory shows at once; similar lengths pad little), one batch at a time."""
        if not requests:
            return
        lm = self.load()
        items = []
        for item in self.tokenize(requests):
            error = hf_steps.refusal(item, lm, self.budget(item.request))
            if error is not None:
                yield Completion(item.request.id, None, error=error)
            else:
                items.append(item)
        items.sort(key=lambda it: -len(it.ids))
        if self.on_work is not None:
            self.on_work()  # loaded: the bar's estimate counts from here
        if self.progress and items:
            assert self.batch_size is not None
            batches = -(-len(items) // self.batch_size)
            _note(
                f"generating {len(items)} answers in {batches} batch{'es' if batches > 1 else ''}, the longest prompts "
                f"first ({len(items[0].ids):,} tokens): the bar shows its estimate once the first batch ends"
            )
        # generate runs in a worker thread: Ctrl-C (the task cancelled) sets `stop` at once; see hf_steps.Interrupted.
        stop = threading.Event()
        start = 0
        try:
            while start < len(items):
                assert self.batch_size is not None
                batch = items[start : start + self.batch_size]
                for completion in await asyncio.to_thread(self._run_batch, batch, stop):
                    yield completion
                start += len(batch)
        finally:
            stop.set()

    def _run_batch(self, batch: list[hf_steps.Item], stop: threading.Event) -> list[Completion]:
        try:
            return self._generate(batch, stop)
        except self.torch.cuda.OutOfMemoryError:
            if self.options.batch_size is not None or len(batch) == 1:
                raise HarnessError(
                    f"out of GPU memory with {len(batch)} prompt(s) per batch: "
                    "use a smaller --batch-size, a smaller --dtype, or more GPUs"
                ) from None
            self.torch.cuda.empty_cache()
            half = len(batch) // 2
            self.batch_size = half
            return self._run_batch(batch[:half], stop) + self._run_batch(batch[half:], stop)
        except RuntimeError as e:
            message = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            return [Completion(it.request.id, None, error=message) for it in batch]

    def _generate(self, batch: list[hf_steps.Item], stop: threading.Event) -> list[Completion]:
        torch, lm = self.torch, self.load()
        width, pad = max(len(it.ids) for it in batch), lm.tokenizer.pad_token_id
        rows, masks = hf_steps.padded(batch, width, pad, lm.encoder_decoder)
        input_ids = torch.tensor(rows, device=lm.device)
        attention_mask = torch.tensor(masks, device=lm.device)
        allowed = None if self.constrain is None else hf_steps.allowed(lm, width, self.constrain)
        with torch.inference_mode():
            cache = hf_steps.prefill(torch, self.transformers, lm, input_ids, attention_mask, stop)
            if stop.is_set():
                return []  # stopped between two chunks of the prompts: nothing generated, nothing to keep
            out = lm.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                # None: generate reads the prompts itself (a GPU, short prompts, T5)
                **({hf_steps.cache_argument(lm.model): cache} if cache is not None else {}),
                max_new_tokens=max(self.budget(it.request) for it in batch),
                do_sample=False,
                num_beams=1,
                pad_token_id=pad,
                return_dict_in_generate=True,
                output_logits=self.expected,  # raw logits, before any logits processor of generation_config
                prefix_allowed_tokens_fn=allowed,
                stopping_criteria=[hf_steps.Interrupted(stop, torch)],
            )
        if stop.is_set():
            return []  # interrupted: the outputs are cut short, and the run is being cancelled anyway
        sequences = out.sequences
        probs = hf_steps.first_position_probs(torch, out.logits[0], lm) if self.expected else [None] * len(batch)
        # Encoder-decoder output starts with the decoder start token; decoder-only output repeats the prompt.
        new = sequences[:, 1:] if lm.encoder_decoder else sequences[:, width:]
        completions = []
        for row, (it, tokens, p) in enumerate(zip(batch, new.tolist(), probs, strict=True)):
            budget = self.budget(it.request)
            kept = hf_steps.until_eos(tokens[:budget], lm.eos_ids)
            text = lm.tokenizer.decode(kept, skip_special_tokens=True)
            p = hf_steps.answer_probs(torch, out.logits, row, kept, lm, p) if p is not None else None
            usage = Usage(len(it.ids), len(kept))
            finish = hf_steps.finish_reason(kept, budget, lm.eos_ids)
            completions.append(Completion(it.request.id, text, usage=usage, score_probs=p, finish_reason=finish))
        return completions

    def budget(self, request: Request) -> int:
        """New tokens for a request: its answer's, and a reasoning run's thinking budget."""
        return self.thinking.max_tokens(request.max_tokens)


def _note(line: str) -> None:
    """A status line on stderr, where the progress bar is: what a local model does before its first answer."""
    print(line, file=sys.stderr, flush=True)
