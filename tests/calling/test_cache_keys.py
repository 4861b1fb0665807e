"""KeyMaker computes exactly request_key's keys (a cache written before it must still answer)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from harness.calling.cache import ResponseCache
from harness.calling.cache_keys import KeyMaker, request_key
from harness.types import Completion, Request, Usage
from tests.calling.test_cache import Stub

# The key as issue 8's cache defined it, spelled out here so that a change to request_key shows up too.
FROZEN = {"v": 1, "backend": "openai", "model": "gpt-4o", "prompt": "Rate: a. Output:", "max_tokens": 20}
PARAMS = {"base_urls": ["https://api.openai.com/v1/"], "sent": {"temperature": 0.0}}


def test_request_key_is_still_the_sha256_of_the_sorted_json() -> None:
    identity = FROZEN | {"params": PARAMS, "temperature": 0.0}
    want = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    assert request_key(Stub(), Request("1", "Rate: a. Output:")) == want


def test_a_repeat_has_a_key_of_its_own_and_the_first_keeps_the_old_key() -> None:
    first, again = Request("a", "Rate: a. Output:"), Request("b", "Rate: a. Output:", sample=1)
    identity = FROZEN | {"params": PARAMS, "temperature": 0.0, "sample": 1}
    want = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    assert request_key(Stub(), again) == want != request_key(Stub(), first)
    assert KeyMaker(Stub())(again) == want


def test_an_unpooled_instruction_has_a_key_of_its_own_and_pooling_all_keeps_the_old_key() -> None:
    whole, text = Request("a", "Instruct: x\nQuery: c"), Request("b", "Instruct: x\nQuery: c", unpooled=19)
    identity = FROZEN | {"prompt": whole.prompt, "params": PARAMS, "temperature": 0.0}
    assert request_key(Stub(), whole) == hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    want = hashlib.sha256(json.dumps(identity | {"unpooled": 19}, sort_keys=True).encode()).hexdigest()
    assert request_key(Stub(), text) == want == KeyMaker(Stub())(text) != request_key(Stub(), whole)


class Odd:
    def __str__(self) -> str:
        return "an object only default=str can write"


@pytest.mark.parametrize(
    "params",
    [
        PARAMS,
        {"z": 1, "a": [1.5, None, True], "nested": {"b": "é", "a": float("inf")}, "odd": Odd(), "t": (1, 2)},
        {},
    ],
    ids=["openai-like", "awkward values", "empty"],
)
def test_keymaker_agrees_with_request_key(params: dict[str, object]) -> None:
    rng = random.Random(0)
    alphabet = 'abc "\\\n\t\x00é東京😀\u2028<>&'
    requests = [Request("0", ""), Request("1", "x", max_tokens=None), Request("2", "y", 5, None)]
    for i in range(300):
        prompt = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        sample = rng.choice([0, 0, 1, 4, 12])  # repeats of one prompt (harness/variants/reannotate.py)
        unpooled = rng.choice([0, 0, 3, 17])  # an instruction left out of pooling (harness/variants/case.py)
        requests.append(
            Request(str(i), prompt, rng.choice([1, 20, 4096]), rng.choice([0.0, 0.7, 1.0, 1e-7]), sample, unpooled)
        )
    backend = Stub(name="anthropic", model='claude "x"', params=params)
    keys = KeyMaker(backend)
    for r in requests:
        assert keys(r) == request_key(backend, r), r


class Prompt(str):
    """A str subclass: json.dumps writes it as its text, which KeyMaker leaves to the definition."""


@pytest.mark.parametrize("prompt", [Odd(), Prompt("Rate: a."), 12.5], ids=["object", "str subclass", "number"])
def test_a_prompt_that_is_no_plain_str_gets_the_definitions_key(prompt: object) -> None:
    request = Request("0", prompt)  # type: ignore[arg-type]
    want = request_key(Stub(), request)
    assert KeyMaker(Stub())(request) == want
    assert want == request_key(Stub(), Request("0", json.loads(json.dumps(prompt, default=str))))


def test_get_many_answers_each_id_including_ids_that_share_a_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get_many({"a": "k0"}) == {}  # no file yet: nothing to look up, nothing created
    assert not (tmp_path / "c.sqlite").exists()
    for i in range(0, 1200, 2):  # every second key stored; more keys than one query binds
        cache.put(f"k{i}", Completion("x", f"{i}", usage=Usage(3, 1)), "openai", "m")
    wanted = {f"id{i}": f"k{i}" for i in range(1200)} | {"twin": "k4"}
    got = cache.get_many(wanted)
    assert set(got) == {f"id{i}" for i in range(0, 1200, 2)} | {"twin"}
    assert got["twin"] == Completion("twin", "4", usage=Usage(3, 1), cached=True)
    assert got["id1198"].text == "1198" and got["id1198"].request_id == "id1198"
    assert cache.get("k2", "r") == Completion("r", "2", usage=Usage(3, 1), cached=True)
    cache.close()
