"""Templates render byte-identical to the published reference code, and fail loudly when misused."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.datasets.choose import load_dataset
from harness.prompting.render import TEMPLATES_DIR, PromptRenderer, template_name
from harness.types import Example, HarnessError
from tests.conftest import SHARED, SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared

GOLDEN = SHARED / "golden" / "reference_prompts.jsonl"


@requires_shared
def test_every_golden_prompt_is_byte_identical() -> None:
    cases = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    assert len(cases) == 495
    data = {
        "csts": load_dataset("csts", "validation", archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD),
        "stsb": load_dataset("stsb", "validation"),
    }
    mismatched = []
    for case in cases:
        ds = data[case["dataset"]]
        renderer = PromptRenderer(template_name(case["dataset"], case["instr"]))
        shots = [ds.pool[i] for i in case["shot_rows"]]
        if renderer.render(ds.examples[case["query_row"]], shots) != case["prompt"]:
            mismatched.append((case["dataset"], case["instr"], case["shots"], case["query_row"]))
    assert mismatched == []


def test_zero_shot_layout_has_trailing_output_key() -> None:
    q = Example("0", "A cat sits.", "A dog runs.", "The animal.", 3.0)
    text = PromptRenderer("csts/none.j2").render(q, [])
    assert text == "Input:  Sentence 1:  A cat sits. Sentence 2:  A dog runs. Condition:  The animal. Output: "


def test_shot_labels_render_as_floats() -> None:
    q = Example("0", "a", "b", "c", None)
    shot = Example("9", "x", "y", "z", 4.0)
    text = PromptRenderer("csts/short.j2").render(q, [shot])
    assert "Condition:  z Output: 4.0\n" in text


def test_unknown_instruction_is_one_clear_error() -> None:
    with pytest.raises(HarnessError, match="unknown instruction level 'bogus'"):
        template_name("csts", "bogus")


def test_unknown_template_lists_the_available_ones() -> None:
    with pytest.raises(HarnessError, match=r"unknown template 'csts/nope.j2'; available: .*csts/long.j2"):
        PromptRenderer("csts/nope.j2")


def test_missing_field_fails_loudly(tmp_path: Path) -> None:
    t = tmp_path / "mine.j2"
    t.write_text("{{ query.sentence1 }} {{ query.no_such_field }}")
    with pytest.raises(HarnessError, match="no_such_field"):
        PromptRenderer(str(t)).render(Example("0", "a", "b", "c", 1.0), [])


def test_hashes_cover_included_templates() -> None:
    hashes = PromptRenderer("csts/long.j2").hashes()
    assert set(hashes) == {"csts/long.j2", "csts/none.j2"}
    assert all(len(h) == 64 for h in hashes.values())


def test_sentences_are_stripped_and_conditions_kept_as_the_reference_does() -> None:
    """The reference code calls .strip() on both sentences (not the condition) before joining the keys."""
    q = Example("0", "  A cat sits. ", "A dog runs.\n", " The animal. ", None)
    shot = Example("1", " x ", "y ", "z", 2.0)
    text = PromptRenderer("csts/none.j2").render(q, [shot])
    assert text == (
        "Input:  Sentence 1:  x Sentence 2:  y Condition:  z Output: 2.0\n"
        "Input:  Sentence 1:  A cat sits. Sentence 2:  A dog runs. Condition:   The animal.  Output: "
    )
    stsb = PromptRenderer("stsb/none.j2").render(Example("0", " a  b ", "c ", "", None), [])
    assert stsb == "Input:  Sentence 1:  a  b Sentence 2:  c Output: "


def test_a_copy_of_a_bundled_template_works_from_anywhere(tmp_path: Path) -> None:
    """Bundled templates include each other ("csts/none.j2"): the loader looks beside the file, then bundled."""
    from harness.prompting.render import TEMPLATES_DIR

    mine = tmp_path / "elsewhere" / "my-long.j2"
    mine.parent.mkdir()
    mine.write_text((TEMPLATES_DIR / "csts" / "long.j2").read_text())
    q, shot = Example("0", "A cat sits.", "A dog runs.", "The animal.", None), Example("1", "x", "y", "z", 2.0)
    assert PromptRenderer(str(mine)).render(q, [shot]) == PromptRenderer("csts/long.j2").render(q, [shot])
    assert set(PromptRenderer(str(mine)).hashes()) == {"my-long.j2", "csts/none.j2"}


def test_an_include_beside_the_users_file_wins(tmp_path: Path) -> None:
    (tmp_path / "csts").mkdir()
    (tmp_path / "csts" / "none.j2").write_text("MINE {{ query.sentence1 }}")
    (tmp_path / "t.j2").write_text('{% include "csts/none.j2" %}')
    assert PromptRenderer(str(tmp_path / "t.j2")).render(Example("0", "a", "b", "c", None), []) == "MINE a"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (b'{% include "nothere.j2" %}', "template t.j2: included template 'nothere.j2' not found"),
        (b"{{ query.sentence1 }}\n{{ 1/0 }}", "template t.j2 line 2: ZeroDivisionError: division by zero"),
        (b"caf\xe9 {{ query.sentence1 }}", "template t.j2: not UTF-8 text (byte 3)"),
        (b"{{ query.sentence1 ", "template t.j2: line 1: unexpected end of template"),
        (b'{% include "broken.j2" %}', "template t.j2: included broken.j2 line 1"),
    ],
)
def test_every_template_failure_is_one_harness_error(tmp_path: Path, source: bytes, message: str) -> None:
    (tmp_path / "broken.j2").write_text("{% if %}")
    (tmp_path / "t.j2").write_bytes(source)
    with pytest.raises(HarnessError) as e:
        PromptRenderer(str(tmp_path / "t.j2")).render(Example("0", "a", "b", "c", None), [])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_directory_or_fifo_named_like_a_template_is_refused(tmp_path: Path) -> None:
    import os

    (tmp_path / "d.j2").mkdir()
    os.mkfifo(tmp_path / "f.j2")
    with pytest.raises(HarnessError, match="d.j2 is a directory, not a file"):
        PromptRenderer(str(tmp_path / "d.j2"))
    with pytest.raises(HarnessError, match=r"f.j2 is a FIFO \(named pipe\), not a file"):
        PromptRenderer(str(tmp_path / "f.j2"))


def test_templates_render_as_under_jinja2s_own_environment(tmp_path: Path) -> None:
    """PromptRenderer's Environment keeps each template's globals in a plain dict (cheaper contexts, one per render
    and per include): every bundled template, and one that uses jinja2's globals, renders exactly as before."""
    import jinja2

    own = tmp_path / "globals.j2"
    own.write_text('{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}'
                   '{{ dict(a=1)["a"] }}{% set c = cycler("x", "y") %}{{ c.next() }}{{ c.next() }}'
                   '{% include "csts/none.j2" %}')  # fmt: skip
    fields = {
        "sentence1": " a b ",
        "sentence2": "c",
        "condition": "C.",
        "answer1": "x",
        "answer2": "y",
        "label": 4.0,
        "reply": '{"rating": 4, "justification": "j"}',
    }  # reply: reannotate/rating.j2's shots
    query, shot = SimpleNamespace(**fields), SimpleNamespace(**fields)
    names = [*sorted(p.relative_to(TEMPLATES_DIR).as_posix() for p in TEMPLATES_DIR.rglob("*.j2")), str(own)]
    for name in names:
        ours = PromptRenderer(name)
        plain = jinja2.Environment(loader=ours.env.loader, undefined=jinja2.StrictUndefined, autoescape=False)
        extra = {"sentence": " s ", "question": "What?", "condition": " D. "}  # qa-answer's, reannotate/rating's
        expected = plain.get_template(ours.name).render(query=query, shots=[shot, shot], **extra)
        assert ours.render(query, [shot, shot], **extra) == expected, name  # type: ignore[arg-type]


def test_text_is_never_html_escaped() -> None:
    q = Example("0", '<b>"Tom & Jerry\'s"</b>', "a < b > c", "x & y", 3.0)
    text = PromptRenderer("csts/none.j2").render(q, [])
    assert '<b>"Tom & Jerry\'s"</b>' in text and "a < b > c" in text and "x & y" in text


def test_a_template_edited_after_loading_does_not_change_the_runs_prompts(tmp_path: Path) -> None:
    """Every prompt comes from the sources hashed into config.json: no reload when a file changes later, not
    even an included one (which jinja2 looks up again at every render)."""
    import os

    names = ["a.j2", "b.j2", "c.j2"]  # more includes than a small template cache would hold
    for name in names:
        (tmp_path / name).write_text(f"first {name} {{{{ query.sentence1 }}}} ")
    path = tmp_path / "mine.j2"
    path.write_text("".join(f'{{% include "{name}" %}}' for name in names))
    renderer = PromptRenderer(str(path))
    q = Example("0", "s1", "s2", "c", 3.0)
    first = "first a.j2 s1 first b.j2 s1 first c.j2 s1 "
    assert renderer.render(q, []) == first
    hashes = renderer.hashes()
    for name in [*names, "mine.j2"]:
        (tmp_path / name).write_text("second {{ query.sentence1 }}")
        later = (tmp_path / name).stat().st_mtime + 60
        os.utime(tmp_path / name, (later, later))
    assert renderer.render(q, []) == first and renderer.hashes() == hashes


def test_the_datasets_folder_is_searched_for_includes(tmp_path: Path) -> None:
    path = tmp_path / "wrapper.j2"
    path.write_text('{% include "none.j2" %}')  # csts/none.j2, found through dataset="csts"
    q = Example("0", "A cat sits.", "A dog runs.", "The animal.", 3.0)
    assert PromptRenderer(str(path), dataset="csts").render(q, []) == PromptRenderer("csts/none.j2").render(q, [])
    with pytest.raises(HarnessError, match="included template 'none.j2' not found"):
        PromptRenderer(str(path))
