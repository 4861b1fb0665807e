"""Tiny randomly initialised GPT-2 and T5 with tokenizers trained on the spot: real transformers code, no hub.

Imported only by tests that have already checked torch and transformers are installed.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import synthetic_rows

GPT2_EOS = "<|endoftext|>"
T5_SPECIALS = ["<pad>", "</s>", "<unk>"]  # ids 0, 1, 2 as in T5
CONTEXT = 2048  # the tiny GPT-2's n_positions: room for few-shot prompts in a tokenizer that knows few words


def corpus() -> list[str]:
    """Synthetic sentences plus the templates' keys and numbers, so prompts tokenize into real pieces."""
    lines = [f"{r['sentence1']} {r['sentence2']} {r['condition']}" for r in synthetic_rows(60, 7)]
    lines += ["Input: Sentence 1: Sentence 2: Condition: Output: 1.0 2.0 3.0 4.0 5.0 0 1 2 3 4 5 ."] * 5
    return lines


def _trained(specials: list[str], vocab_size: int = 400):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus(), trainer)
    return tok


def save_tiny_gpt2(directory: Path) -> Path:
    """A 2-layer GPT-2 (decoder-only): no special tokens added to prompts, eos doubles as pad."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = _trained([GPT2_EOS])
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=GPT2_EOS, eos_token=GPT2_EOS, unk_token=GPT2_EOS)
    eos = tok.token_to_id(GPT2_EOS)
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=CONTEXT,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=eos,
        eos_token_id=eos,
    )
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(directory)
    hf_tok.save_pretrained(directory)
    return directory


def save_tiny_t5(directory: Path) -> Path:
    """A 2-layer T5 (encoder-decoder): the tokenizer appends </s>, as T5's does."""
    import torch
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tok = _trained(T5_SPECIALS)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    config = T5Config(
        vocab_size=tok.get_vocab_size(),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config)
    with torch.no_grad():  # untrained, it answers its start token (pad) forever: let it say something
        model.lm_head.weight[0].zero_()
    model.save_pretrained(directory)
    hf_tok.save_pretrained(directory)
    return directory


def shared(save: Callable[[Path], Path], factory: pytest.TempPathFactory) -> Path:
    """`save`'s model built once per test session and shared by pytest-xdist's workers (their temporary folders sit
    in one folder of the session): the first worker to need it builds it under a lock, the others wait and reuse
    it. Tests only read it. The models are seeded, so this is the model each worker would have built."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return save(factory.mktemp(save.__name__))
    root = factory.getbasetemp().parent
    folder, done = root / save.__name__, root / f"{save.__name__}.done"
    with open(root / f"{save.__name__}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            save(folder)
            done.touch()
    return folder
