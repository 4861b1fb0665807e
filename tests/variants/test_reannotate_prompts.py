"""The re-annotation prompts: Zhang et al. 2025's Figure 3 and Figure 4 text, verbatim, around our input blocks."""

from __future__ import annotations

import json

from harness.prompting.render import PromptRenderer
from harness.types import Example
from harness.variants.reannotate import (
    CONDITION_TEMPLATE,
    RATING_TEMPLATE,
    SHOTS_FILE,
    Settings,
    condition_requests,
    rating_requests,
    shot_views,
)

DEFINITION = """1. The two sentences are completely dissimilar with respect to the condition.
2. The two sentences are dissimilar, but are on a similar topic with respect to the condition.
3. The two sentences are roughly equivalent, but some important information differs or is missing with respect to the condition.
4. The two sentences are mostly equivalent, but some unimportant details differ with respect to the condition.
5. The two sentences are completely equivalent with respect to the condition."""  # noqa: E501

# Figure 3, as the paper prints it (its list bullets "- *" read as "*").
FIGURE_3 = f"""This is a Conditional STS task: Evaluate the similarity between the two sentences, with respect to the condition.

Sentence pair has a label (score) between 1 and 5 as follows: Assign the pair a score between 1 and 5 as follows:

{DEFINITION}

Check and modify the provided condition if it is inaccurate or ambiguous, following these guidelines strictly:

* Conditions must be clear and specific. (e.g., instead of "animal", specify clearly such as "species of animal".)
* Remove stopword from conditions (e.g., "the").
* Conditions must accurately match human-annotated labels.
* Provide conditions concisely, without context-specific details. Good examples: color of clothing, type of event, intention of travel.
* Do NOT overly specify the condition more narrowly than the original meaning.

Return a JSON object with two fields:

- improved_condition: the improved condition,
- justification: a single sentence explaining why you update the condition.

Give empty str this if only stopword 'the' is removed."""  # noqa: E501

# Figure 4 up to its examples.
FIGURE_4 = f"""Definition: Evaluate the similarity between the two sentences, with respect to the condition. Assign the pair a score between 1 and 5 as follows:

{DEFINITION}

Evaluate the similarity for condition type "number of", following these guidelines strictly:

* Numbers need to be counted explicitly (e.g., "a man and a woman" → 2 people)
* If the two sentences mention the same number of entities → Label = 5
* If the numbers differ → Label = 1
* If no explicit number, follow the definition above and judge based on approximate quantity (e.g., "many" vs "a few").

Return a JSON object with two fields:

"rating": the similarity rating (between 1 to 5 as defined above),

"justification": a single sentence explaining why you gave that similarity rating.

Do not return anything else other than this JSON object.

Do not use code blocks."""  # noqa: E501

Q = Example("7", "A cat sleeps on a red sofa. ", "A dog sleeps on a blue sofa.", "The color of the sofa.", 2.0)


def test_figure_3_prompt_then_the_row() -> None:
    (r,) = condition_requests([Q], PromptRenderer(CONDITION_TEMPLATE), 160)
    row = "Sentence1: A cat sleeps on a red sofa.\nSentence2: A dog sleeps on a blue sofa.\n"
    assert r.prompt == f"{FIGURE_3}\n\n{row}Condition: The color of the sofa.\nLabel: 2"
    assert (r.id, r.max_tokens, r.temperature, r.sample) == ("cond-7", 160, 0.0, 0)


def test_a_hidden_label_leaves_the_label_line_out() -> None:
    hidden = Example("0", "a", "b", "c", None)
    (r,) = condition_requests([hidden], PromptRenderer(CONDITION_TEMPLATE), 160)
    assert r.prompt.endswith("Sentence1: a\nSentence2: b\nCondition: c")


def test_figure_4_prompt_five_synthetic_shots_then_the_query() -> None:
    shots = json.loads(SHOTS_FILE.read_text())["shots"]
    assert [s["rating"] for s in shots] == [1, 2, 3, 4, 5]
    (repeat,) = rating_requests(
        [Q], {"7": "color of sofa"}, shot_views(), PromptRenderer(RATING_TEMPLATE), Settings(), 160
    )
    blocks = [
        f"Example {i}\n\nSentence1: {s['sentence1']}\n\nSentence2: {s['sentence2']}\n\nCondition: {s['condition']}"
        f"\n\n{json.dumps({'rating': s['rating'], 'justification': s['justification']})}\n"
        for i, s in enumerate(shots, start=1)
    ]
    query = "Sentence1: A cat sleeps on a red sofa.\n\nSentence2: A dog sleeps on a blue sofa.\n\n"
    query += "Condition: color of sofa"
    assert repeat[0].prompt == FIGURE_4 + "\n\n" + "\n".join(blocks) + "\n" + query


def test_repeats_differ_only_in_their_sample_number() -> None:
    settings = Settings(repeats=3, temperature=1.0)
    repeats = rating_requests([Q], {}, shot_views(), PromptRenderer(RATING_TEMPLATE), settings, 100)
    requests = [r for repeat in repeats for r in repeat]
    assert [(r.id, r.sample) for r in requests] == [("rate-7-0", 0), ("rate-7-1", 1), ("rate-7-2", 2)]
    assert len({(r.prompt, r.max_tokens, r.temperature) for r in requests}) == 1
    assert "Condition: The color of the sofa." in requests[0].prompt  # not rewritten: the row's own
