"""Reading the re-annotation prompts' JSON replies: a table of replies, each with what it must give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.scoring.reannotation import (
    MAX_TRIES,
    WINDOW,
    Reading,
    _parse_at,
    combined_label,
    counts,
    prompt_objects,
    read_condition,
    read_rating,
)


@pytest.mark.parametrize(
    ("reply", "value", "status"),
    [
        ('{"rating": 4, "justification": "Both say three."}', 4, "json"),
        ('  {"rating": 1.0, "justification": ""}\n', 1, "json"),
        ('```json\n{"rating": 5, "justification": "Same."}\n```', 5, "embedded"),
        ('Here is my answer: {"rating": 2} Hope this helps {"rating": 3}', 2, "embedded"),  # the first object
        ('{not json} then {"rating": 3}', 3, "embedded"),
        ('{"rating": "4", "justification": "x"}', None, "bad-field"),  # a string, not a number
        ('{"rating": 4.5}', None, "bad-field"),
        ('{"rating": 6}', None, "bad-field"),
        ('{"rating": 0}', None, "bad-field"),
        ('{"rating": true}', None, "bad-field"),  # JSON true is Python 1: still not a rating
        ('{"score": 3}', None, "bad-field"),
        ('[{"rating": 3}]', 3, "embedded"),  # a list is not the object asked for; the object inside it is
        ('{"rating": 4, "justification": "Both mention the cut', None, "invalid-json"),  # cut at max_tokens
        ("4", None, "invalid-json"),
        ("", None, "invalid-json"),
        (None, None, "invalid-json"),
        # issue 30: nesting deeper than the json module recurses, and replies of brackets, never raise
        ("[" * 1200, None, "invalid-json"),
        ('{"a": ' * 1200, None, "invalid-json"),
        ("[" * 1200 + '{"rating": 3}', 3, "embedded"),
        ('{"a": ' + "[" * 1200 + "]" * 1200 + '} then {"rating": 2}', 2, "embedded"),  # past the deep one
        ("{" * 300_000 + '{"rating": 5}', 5, "embedded"),
        ('{"' + "{" * 300_000, None, "invalid-json"),
        ('{"rating": ' + "9" * 400 + "}", None, "bad-field"),
        ('Sure: {"justification": "' + "x" * 5000 + '", "rating": 4}', 4, "embedded"),  # longer than one window
    ],
)
def test_read_rating(reply: str | None, value: int | None, status: str) -> None:
    r = read_rating(reply)
    assert (r.value, r.status) == (value, status)


@pytest.mark.parametrize("pad", range(225, 260))
def test_an_object_is_found_wherever_its_first_parse_window_ends(pad: int) -> None:
    """The first parse from a "{" sees a window of the text: one ending inside a literal (true), an escape or a
    string is grown, never read as a broken object."""
    reply = 'x {"j": "' + "a" * pad + '\\u00e9", "b": true, "c": null, "rating": 3}'
    assert (read_rating(reply).value, read_rating(reply).status) == (3, "embedded")


def test_a_failed_request_is_an_error_not_an_invalid_reply() -> None:
    assert read_rating(None, "HTTP 500").status == "error"
    assert read_condition(None, "timeout").status == "error"


@pytest.mark.parametrize(
    ("reply", "value", "status"),
    [
        ('{"improved_condition": "species of  animal", "justification": "Specific."}', "species of animal", "json"),
        ('{"improved_condition": "color of shirt", "justification": ""}', "color of shirt", "json"),
        ('{"improved_condition": "", "justification": ""}', None, "bad-field"),
        ('{"improved_condition": 3}', None, "bad-field"),
        ('{"condition": "x"}', None, "bad-field"),
        ("improved_condition: type of room", None, "invalid-json"),
        ('{"improved_condition": "colour \\ud800 of it"}', None, "unencodable"),  # a lone surrogate (issue 41)
        ('{"improved_condition": "colour \\ud83d\\ude00 of it"}', "colour \U0001f600 of it", "json"),  # a pair
    ],
)
def test_read_condition(reply: str, value: str | None, status: str) -> None:
    r = read_condition(reply)
    assert (r.value, r.status) == (value, status)


def test_justification_is_kept_when_it_is_text() -> None:
    assert read_rating('{"rating": 2, "justification": "Different topics."}').justification == "Different topics."
    assert read_rating('{"rating": 2, "justification": 7}').justification is None


def test_counts_and_the_invalid_share_leave_failed_requests_apart() -> None:
    readings = [read_rating('{"rating": 3}'), read_rating('```{"rating": 3}```'), read_rating("nope")]
    readings += [read_rating('{"rating": 9}'), read_rating(None, "HTTP 500")]
    c = counts(readings)
    assert (c["json"], c["embedded"], c["invalid-json"], c["bad-field"], c["error"]) == (1, 1, 1, 1, 1)
    assert c["invalid_pct"] == 50.0 and c["not_bare_json_pct"] == 75.0  # of the 4 answered


@pytest.mark.parametrize(
    ("ratings", "original", "label"),
    [
        ([4, 5], None, 5),  # 4.5: halves up (Python's round() would give 4)
        ([2, 3, None], None, 3),
        ([1, 2, 2], None, 2),
        ([None, None], None, None),
        ([5], 1.0, 3),  # V(y_human + y_LLM)
        ([4, 4], 1.0, 3),
        ([None], 5.0, None),  # no rating: no label, even with the original
        ([5, 5, 5], 1.0, 3),  # three repeats are one model's vote: V(1 + 5) = 3, not (1 + 5 + 5 + 5) / 4 = 4
        ([4, 5, None], 2.0, 3),  # V(2 + 4.5) = 3.25
    ],
)
def test_combined_label(ratings: list[int | None], original: float | None, label: int | None) -> None:
    assert combined_label(ratings, original) == label


@pytest.mark.parametrize(
    ("per_model", "original", "label"),
    [
        ([[5], [3]], 1.0, 3),  # V(y_human + y_GPT-4o + y_Claude), Zhang et al. Table 11's last row
        ([[5, 5, 5, 5], [1]], None, 3),  # each model once, whatever its repeats
        ([[5], [4]], None, 5),  # 4.5: halves up
        ([[None], [2]], 5.0, 4),  # a model without a valid rating has no vote: V(5 + 2) = 3.5
        ([[None], [None]], 5.0, None),
    ],
)
def test_merged_label_counts_the_human_and_each_model_once(
    per_model: list[list[int | None]], original: float | None, label: int | None
) -> None:
    from harness.scoring.reannotation import merged_label

    assert merged_label(per_model, original) == label


# --- the search for an embedded object, its bounds, and the prompt's own objects (mutants the table let pass) ------


def test_a_failed_parse_resumes_after_its_failure() -> None:
    assert read_rating('{"a" oops} and then {"rating": 4}') == Reading(4, None, "embedded")


def test_the_search_gives_up_after_max_tries_places() -> None:
    """docs/variants.md: the search "gives up after 2,000 starts"; an object after that many failed ones is lost."""
    failed = '{"a" x} '  # a "{" with a key's quote that parses to no object
    assert MAX_TRIES == 2000
    assert read_rating(failed * 1999 + '{"rating": 2}') == Reading(2, None, "embedded")
    assert read_rating(failed * 2000 + '{"rating": 2}') == Reading(None, None, "invalid-json")


def test_what_deep_brackets_hold_is_skipped_whole() -> None:
    """Nesting deeper than the json module recurses is passed over to where its brackets close (counted blindly,
    4,096 characters at a time): an object inside it is not looked for, one after it is."""
    deep = '{"x": ' + "[" * 10_000 + '{"rating": 5}' + "]" * 10_000 + "}"
    assert read_rating(deep + ', then {"rating": 2}') == Reading(2, None, "embedded")
    assert read_rating(deep[:-1] + ' {"rating": 1}') == Reading(None, None, "invalid-json")  # never closes
    assert read_rating('{"x": ' + "[" * 3000 + '{"rating": 5}') == Reading(None, None, "invalid-json")
    shallow = '{"x": ' + "[" * 3000 + "]" * 3000 + ', "y": {"rating": 5}} {"rating": 3}'
    assert read_rating(shallow) == Reading(3, None, "embedded")


def test_deep_brackets_that_close_on_a_chunks_last_closer_end_there() -> None:
    """The count goes 4,096 characters at a time and passes over a chunk only where it cannot reach 0: here the
    second chunk's closers bring it to exactly 0, at that chunk's last closer."""
    first = '{"x": ' + "[" * 4090  # 4,096 characters: depth 4,091 after the first chunk
    second = "]" * 4090 + "}" + ", x, "  # 4,096 characters, 4,091 closers, no opener
    assert len(first) == len(second) == 4096
    assert read_rating(first + second + '{"rating": 2}') == Reading(2, None, "embedded")


class Windows(json.JSONDecoder):
    """The json module's decoder, noting the length of every text it is given: the work a parse does."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        self.seen.append(len(s))
        return super().raw_decode(s, idx)


def test_a_parse_reads_one_window_and_grows_it_fourfold_only_while_it_runs_out() -> None:
    """Bounded work per place (issue 30): a string longer than the window is read in 256, 1,024, ... characters
    (the text's end last), and a parse that fails inside its window reads nothing more."""
    assert WINDOW == 256
    text = 'x {"j": "' + "a" * 2000 + '", "rating": 3}'
    decoder = Windows()
    assert _parse_at(decoder, text, 2) == ({"j": "a" * 2000, "rating": 3}, 2)
    assert decoder.seen == [256, 1024, len(text) - 2]
    decoder = Windows()
    assert _parse_at(decoder, 'x {"a" oops} ' + " " * 500, 2) == (None, 2 + 5)  # resumes where it failed
    assert decoder.seen == [256]


@pytest.mark.parametrize(("at", "seen"), [(239, [256]), (240, [256, 741])])
def test_a_failure_in_a_windows_last_16_characters_is_read_again_in_a_larger_one(at: int, seen: list[int]) -> None:
    """A literal cut by the window's end (`tru|e`, a number) fails within its length of the end: from 16
    characters before it, the parse is tried again on more text; before that, the failure is the reply's."""
    text = '{"a": ' + " " * (at - 6) + "x" + " " * (740 - at)
    assert len(text) == 741
    decoder = Windows()
    assert _parse_at(decoder, "> " + text, 2) == (None, 2 + at)
    assert decoder.seen == seen


def test_a_window_that_reaches_the_texts_end_is_not_grown() -> None:
    text = '{"j": "' + "a" * 249  # 256 characters, its string unterminated: nothing more to read
    decoder = Windows()
    assert _parse_at(decoder, text, 0)[0] is None
    assert decoder.seen == [256]


def test_the_prompts_own_objects_in_order_outer_ones_only() -> None:
    prompt = 'Reply as {"rating": N}. Examples: {"rating": 4, "justification": "a"} {{"rating": 2} {"n": {"m": 1}}'
    assert prompt_objects(prompt) == [{"rating": 4, "justification": "a"}, {"rating": 2}, {"n": {"m": 1}}]
    assert prompt_objects("no object here") == [] and prompt_objects('{"deep": ' + "[" * 5000) == []
    assert read_rating('{"rating": 4, "justification": "a"}', prompt=prompt) == Reading(None, "a", "echo")
    assert read_rating('{"rating": 4, "justification": "b"}', prompt=prompt) == Reading(4, "b", "json")
    assert read_condition('{"improved_condition": "x"}', prompt='{"improved_condition": "x"}').status == "echo"


def test_an_unusable_field_keeps_the_justification() -> None:
    assert read_condition('{"improved_condition": "", "justification": "j"}') == Reading(None, "j", "bad-field")
    assert read_rating('{"rating": 7, "justification": "j"}') == Reading(None, "j", "bad-field")
    surrogate = '{"improved_condition": "a \\ud800", "justification": "j"}'
    assert read_condition(surrogate) == Reading(None, "j", "unencodable")


def test_only_json_and_embedded_readings_are_valid() -> None:
    assert read_rating('{"rating": 3}').valid and read_rating('x {"rating": 3}').valid
    assert not any(read_rating(r).valid for r in ('{"rating": 9}', "no", '{"rating": 3}'[:-1]))


def test_counts_round_their_shares_to_two_places() -> None:
    c = counts([read_rating('{"rating": 3}'), read_rating('x {"rating": 3}'), read_rating("no")])
    assert (c["invalid_pct"], c["not_bare_json_pct"]) == (33.33, 66.67)
    assert counts([read_rating(None, "HTTP 500")])["invalid_pct"] is None
