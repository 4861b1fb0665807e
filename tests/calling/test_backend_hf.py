"""The hf backend end to end on CPU: tiny random GPT-2 and T5 saved to disk, loaded and run by real transformers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

from harness.calling.backends.hf import HFBackend
from harness.calling.backends.hf_steps import until_eos
from harness.cli.main import main
from harness.config.settings import LocalOptions
from harness.types import Completion, HarnessError, Request
from tests.tiny_models import CONTEXT, save_tiny_gpt2, save_tiny_t5, shared


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared(save_tiny_gpt2, tmp_path_factory)


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared(save_tiny_t5, tmp_path_factory)


def prompts(n: int) -> list[Request]:
    """Prompts of different lengths, so a batch needs padding."""
    return [
        Request(str(i), f"Input: Sentence 1: a red fox runs past the river{' and the hill' * i}. Output:")
        for i in range(n)
    ]


def complete(backend: HFBackend, requests: Sequence[Request]) -> dict[str, Completion]:
    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]

    return {c.request_id: c for c in asyncio.run(collect())}


def test_decoder_only_answers_every_request_within_20_new_tokens(gpt2_dir: Path) -> None:
    backend = HFBackend(str(gpt2_dir), LocalOptions())
    requests = prompts(5)
    done = complete(backend, requests)
    assert sorted(done) == [r.id for r in requests]
    tok = backend.load().tokenizer
    for r in requests:
        c = done[r.id]
        assert c.error is None and c.text  # an untrained model says something, never nothing
        assert 1 <= c.usage.output_tokens <= 20
        assert c.usage.input_tokens == len(tok(r.prompt)["input_ids"])


def test_decoder_only_pads_on_the_left(gpt2_dir: Path) -> None:
    assert HFBackend(str(gpt2_dir), LocalOptions()).load().tokenizer.padding_side == "left"


def test_decoder_only_batched_answers_equal_one_at_a_time(gpt2_dir: Path) -> None:
    requests = prompts(6)
    batched = complete(HFBackend(str(gpt2_dir), LocalOptions(batch_size=6)), requests)
    single = complete(HFBackend(str(gpt2_dir), LocalOptions(batch_size=1)), requests)
    assert {k: c.text for k, c in batched.items()} == {k: c.text for k, c in single.items()}
    assert len({c.text for c in single.values()}) > 1  # the prompts do lead to different answers


def test_encoder_decoder_batched_answers_equal_one_at_a_time(t5_dir: Path) -> None:
    requests = prompts(6)
    batched = complete(HFBackend(str(t5_dir), LocalOptions(batch_size=6)), requests)
    single = complete(HFBackend(str(t5_dir), LocalOptions(batch_size=1)), requests)
    assert {k: c.text for k, c in batched.items()} == {k: c.text for k, c in single.items()}
    assert all(c.text and c.error is None and c.usage.output_tokens <= 20 for c in batched.values())


def test_encoder_decoder_prompt_ends_with_eos_like_t5(t5_dir: Path) -> None:
    backend = HFBackend(str(t5_dir), LocalOptions())
    (item,) = backend.tokenize([Request("0", "Input: Sentence 1: a cat Output:")])
    assert backend.load().encoder_decoder
    assert item.ids[-1] == backend.load().tokenizer.eos_token_id


def test_prompt_longer_than_the_context_is_an_error_for_that_request_only(gpt2_dir: Path) -> None:
    long = Request("long", "river " * (CONTEXT + 10))
    done = complete(HFBackend(str(gpt2_dir), LocalOptions()), [long, *prompts(2)])
    assert done["long"].text is None and f"exceeds the model's context of {CONTEXT}" in (done["long"].error or "")
    assert done["0"].error is None and done["1"].error is None


def test_chat_wraps_the_prompt_in_the_models_template(gpt2_dir: Path, tmp_path: Path) -> None:
    chat_dir = tmp_path / "chat-gpt2"
    save_tiny_gpt2(chat_dir)
    config = json.loads((chat_dir / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}User: {{ m.content }}\n{% endfor %}Assistant:"
    (chat_dir / "tokenizer_config.json").write_text(json.dumps(config))
    request = prompts(1)
    plain = complete(HFBackend(str(chat_dir), LocalOptions()), request)["0"]
    chat = complete(HFBackend(str(chat_dir), LocalOptions(), chat=True), request)["0"]
    assert chat.error is None
    assert chat.usage.input_tokens > plain.usage.input_tokens


def test_chat_without_a_template_fails_in_one_line(gpt2_dir: Path) -> None:
    with pytest.raises(HarnessError, match="has no chat template"):
        HFBackend(str(gpt2_dir), LocalOptions(), chat=True).load()


def test_dtype_is_applied_to_the_weights(gpt2_dir: Path) -> None:
    import torch

    model = HFBackend(str(gpt2_dir), LocalOptions(dtype="bfloat16")).load().model
    assert next(model.parameters()).dtype == torch.bfloat16


def test_describe_names_what_decides_the_answers(gpt2_dir: Path) -> None:
    d = HFBackend(str(gpt2_dir), LocalOptions(dtype="float32", batch_size=3), chat=False).describe()
    assert d["model"] == str(gpt2_dir) and d["dtype"] == "float32" and d["chat_template"] is False
    assert "greedy" in str(d["decoding"])
    assert "batch_size" not in d  # a throughput knob: changing it must not invalidate cached answers


def test_until_eos_keeps_the_eos_and_drops_the_padding_after_it() -> None:
    assert until_eos([5, 6, 1, 0, 0], frozenset({1})) == [5, 6, 1]
    assert until_eos([5, 6, 7], frozenset({1})) == [5, 6, 7]


def test_missing_model_directory_fails_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="no model directory at"):
        HFBackend(str(tmp_path / "nope"), LocalOptions())


def test_cli_run_writes_a_run_folder(gpt2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--backend", "hf", "--model", str(gpt2_dir), "--dataset", "stsb", "--limit", "8", "--shots", "2"]
    rc = main([*argv, "--results-dir", str(tmp_path), "--run-id", "tiny", "--no-progress", "--batch-size", "4"])
    assert rc == 0, capsys.readouterr().err
    run = tmp_path / "tiny"
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 8 and all(s["output"] and s["error"] is None for s in samples)
    assert all(s["prediction"] is not None for s in samples)  # parsed or the seeded fallback, never missing
    config = json.loads((run / "config.json").read_text())
    assert config["backend"] == "hf" and config["backend_params"]["engine"] == "transformers"
    assert json.loads((run / "metrics.json").read_text())["n"] == 8


def test_cli_t5_layout_run(t5_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--backend", "hf", "--model", str(t5_dir), "--dataset", "stsb", "--limit", "4", "--template", "t5-short"]
    rc = main([*argv, "--shots", "2", "--results-dir", str(tmp_path), "--run-id", "t5", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    first = json.loads((tmp_path / "t5" / "samples.jsonl").read_text().splitlines()[0])
    assert first["prompt"].endswith(" Output:") and "Input: Sentence 1: " in first["prompt"]


def test_missing_extra_fails_in_one_line(
    gpt2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # what `import transformers` meets without the extra
    rc = main(["--backend", "hf", "--model", str(gpt2_dir), "--dataset", "stsb", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and 'pip install -e ".[hf]"' in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_cancelled_run_stops_the_batch_in_flight_promptly(gpt2_dir: Path) -> None:
    """Ctrl-C is asyncio cancelling the run's task (asyncio.Runner's SIGINT handler): the batch being generated
    must stop after its current token, not after all of its tokens (48 s on SmolLM2 before), and yield nothing.
    Counted in forward passes (one a generated token), not seconds, which a busy machine stretches."""
    import threading

    requests = [
        Request(str(i), f"Input: Sentence 1: a red fox{' runs' * i}. Output:", max_tokens=200) for i in range(8)
    ]
    backend = HFBackend(str(gpt2_dir), LocalOptions(batch_size=8))
    model = backend.load().model
    forward, passes, going = model.forward, [0], threading.Event()

    def counted(*args: object, **kwargs: object) -> object:
        passes[0] += 1
        if passes[0] == 5:
            going.set()  # the batch is well under way
        return forward(*args, **kwargs)

    model.forward = counted  # an instance attribute: what nn.Module.__call__ runs

    async def consume(cancel: bool) -> tuple[list[Completion], bool, int]:
        got: list[Completion] = []
        at_stop = [0]

        async def collect() -> None:
            try:
                async for c in backend.complete(requests):
                    got.append(c)
            except asyncio.CancelledError:
                at_stop[0] = passes[0]  # complete() has set its stop flag on the way out
                raise

        task = asyncio.ensure_future(collect())
        if cancel:
            await asyncio.to_thread(going.wait, 600)
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return got, True, at_stop[0]
        return got, False, at_stop[0]

    answers, _, _ = asyncio.run(consume(cancel=False))
    whole = passes[0]
    assert len(answers) == 8 and max(c.usage.output_tokens for c in answers) > 100  # a long batch to interrupt
    assert whole > 100
    passes[0] = 0
    going.clear()
    partial, cancelled, at_stop = asyncio.run(consume(cancel=True))  # asyncio.run waits for generate's thread
    assert cancelled and partial == []  # nothing cut short comes out (it would be cached as an answer)
    # The token being generated when the flag was set (already counted) is the last one.
    assert 5 <= at_stop < whole and passes[0] <= at_stop + 1, f"{passes[0]} tokens, stopped at {at_stop} of {whole}"


def long_prompts(n: int) -> list[Request]:
    text = "Input: Sentence 1: a red fox{}. Output:"
    return [Request(str(i), text.format(" runs past the river" * (60 + 7 * i))) for i in range(n)]


def test_a_prompt_read_in_chunks_gets_the_answers_of_one_pass(gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefill in chunks (a stop is heard between them) is the same attention over the same tokens."""
    from harness.calling.backends import hf_steps

    backend = HFBackend(str(gpt2_dir), LocalOptions(batch_size=4))
    requests = long_prompts(4)
    monkeypatch.setattr(hf_steps, "PREFILL_TOKENS", 10**9)
    whole = complete(backend, requests)
    monkeypatch.setattr(hf_steps, "PREFILL_TOKENS", 4 * 32)  # 32 tokens a chunk: about 10 chunks a prompt
    model = backend.load().model
    forward, read = model.forward, []

    def counted(*args: object, **kwargs: object) -> object:
        read.append(kwargs["input_ids"].shape[-1])  # type: ignore[attr-defined]
        return forward(*args, **kwargs)

    model.forward = functools.wraps(forward)(counted)  # generate reads forward's signature: keep it
    chunked = complete(backend, requests)
    assert {k: c.text for k, c in chunked.items()} == {k: c.text for k, c in whole.items()}
    # generate goes on from the cache: the last prompt token, then one token a pass; it never reads the prompts again
    width = max(len(it.ids) for it in backend.tokenize(requests))
    chunks = -(-(width - 1) // 32)
    assert read[:chunks] == [32] * (chunks - 1) + [(width - 1) - 32 * (chunks - 1)] and set(read[chunks:]) == {1}
    assert len({c.text for c in whole.values()}) > 1  # answers that differ, so the comparison tells something


def test_a_stop_during_a_long_prefill_is_heard_at_the_next_chunk(
    gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM or Ctrl-C while 8 prompts of 99 shots are read took 395 s on SmolLM2 (issue 45): generate read them
    in one forward pass that nothing could stop. Read a chunk at a time, the stop ends the batch after the chunk
    in flight. Counted in forward passes, not seconds."""
    import threading

    from harness.calling.backends import hf_steps

    monkeypatch.setattr(hf_steps, "PREFILL_TOKENS", 8 * 16)  # 16 tokens a chunk: dozens of passes a batch
    backend = HFBackend(str(gpt2_dir), LocalOptions(batch_size=8))
    model = backend.load().model
    forward, passes, going = model.forward, [0], threading.Event()

    read: list[int] = []  # tokens per row each forward pass read

    def counted(*args: object, **kwargs: object) -> object:
        passes[0] += 1
        read.append(kwargs["input_ids"].shape[-1])  # type: ignore[attr-defined]
        if passes[0] == 3:
            going.set()  # three chunks of the prompts read, no token generated yet
        return forward(*args, **kwargs)

    model.forward = counted

    async def consume() -> tuple[list[Completion], int]:
        got: list[Completion] = []
        at_stop = [0]

        async def collect() -> None:
            try:
                async for c in backend.complete(long_prompts(8)):
                    got.append(c)
            except asyncio.CancelledError:
                at_stop[0] = passes[0]
                raise

        task = asyncio.ensure_future(collect())
        await asyncio.to_thread(going.wait, 600)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return got, at_stop[0]

    got, at_stop = asyncio.run(consume())
    width = max(len(it.ids) for it in backend.tokenize(long_prompts(8)))
    assert width > 20 * 16  # the prompts take more than 20 chunks
    assert got == [] and at_stop >= 3 and passes[0] <= at_stop + 1, f"{passes[0]} passes, stopped at {at_stop}"
    assert read == [16] * passes[0]  # stopped within the prompts, each pass one chunk (one pass of them all before)
