"""Which items the CASE projection (harness/variants/case_ffn.py) is trained on and has its epoch chosen on, for a
run's split, labels and subset: trained on the labels the run scores, its epoch chosen on items the run does not
score. Zhang et al. 2025 §4 train on the train split, tune on a 70% part of their validation set and score the other
30% ("We split their validation set 70% vs. 30% randomly").

  --split test                 train: the train split; epoch: the validation split (test's labels are hidden)
  --split validation, --subset reannotated-test (or -train)
                               epoch: the other part of the 70/30 split (harness/datasets/labels.py), the run's labels
  --split validation, --subset all
                               epoch: the validation items the run does not score (--limit, --sample, --ids leave
                               some); none left: the scored items themselves, and the run says its Spearman is
                               optimistic
Training: the train split when the run scores the original labels. The train split has no other labels (Tu et al.
re-annotated validation only): with --labels reannotated or a labels file, the items left for the epoch are divided
by a seeded hash, 70% to train on and 30% to choose the epoch on, so that the projection learns the labels it is
judged by and never sees a scored item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.config.settings import RunConfig
from harness.datasets.choose import load_dataset
from harness.datasets.labels import apply_label_set, reannotated_test_ids, take_subset
from harness.types import Example, HarnessError

OTHER_PART = {"reannotated-test": "reannotated-train", "reannotated-train": "reannotated-test"}
OPTIMISTIC = "epoch chosen on the very items scored (no other validation item is left): its Spearman is optimistic"


@dataclass(frozen=True)
class FfnItems:
    """The projection's training items and epoch-choosing items, with words for the run's record."""

    train: tuple[Example, ...]
    select: tuple[Example, ...]
    label_range: tuple[float, float]
    trained_on: str
    chosen_on: str
    labels: str  # the label set both carry: the run's
    note: str | None = None  # when the epoch was chosen on the scored items


def ffn_items(config: RunConfig, scored: Sequence[Example]) -> FfnItems:
    """The items for `config`'s run, whose scored items (the whole run's, not a --shard part's) are `scored`."""
    data = (config.data_dir, config.archive, config.password_file)
    train = load_dataset(config.dataset, "train", *data)
    validation = load_dataset(config.dataset, "validation", *data)
    if config.split != "validation":  # the test split: its labels are hidden, so nothing of it is used
        return FfnItems(
            train.examples,
            validation.examples,
            train.label_range,
            "the train split (original labels)",
            "the validation split (original labels)",
            "original",
        )
    labelled, _ = apply_label_set(validation, config.labels)
    scored_ids = {e.id for e in scored}
    if config.subset != "all":
        other = OTHER_PART[config.subset]
        rest = take_subset(labelled, other, config.subset_seed).examples
        where = f"the other part of the 70/30 split of validation (--subset {other}, seed {config.subset_seed})"
    else:
        rest = labelled.examples
        where = "the validation items this run does not score"
    rest = tuple(e for e in rest if e.id not in scored_ids and e.label is not None)
    if config.labels == "original":
        if not rest:
            return FfnItems(
                train.examples, tuple(scored), train.label_range, "the train split (original labels)",
                "the scored items themselves", "original", OPTIMISTIC,
            )  # fmt: skip
        return FfnItems(train.examples, rest, train.label_range, "the train split (original labels)", where, "original")
    held = reannotated_test_ids([e.id for e in rest], config.subset_seed)
    fit, select = tuple(e for e in rest if e.id not in held), tuple(e for e in rest if e.id in held)
    if len(fit) < 3 or len(select) < 3:
        raise HarnessError(
            f"--case-ffn with --labels {config.labels}: the train split has only the original labels, so the "
            f"projection learns from validation items the run does not score, and only {len(rest)} are left: use "
            "--subset reannotated-test (or --limit, --sample, --ids)"
        )
    return FfnItems(
        fit,
        select,
        labelled.label_range,
        f"70% of {where}, labels {config.labels} (the train split has only the original labels)",
        f"the other 30% of them (seed {config.subset_seed})",
        config.labels,
    )
