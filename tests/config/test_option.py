"""harness/config/option.py's declare(): what the command line makes of a declared field (its flag, kind, converter,
default and section), and Declared.value, on a toy dataclass with every kind of option."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.config.option import Affects, Declared, Option, declared, option, section, switch

R = Affects.REQUEST


def shout(text: str) -> str:
    return text.upper()


@dataclass(frozen=True)
class Inner:
    rate: float = option(1.5, "a number", affects=R)
    tags: tuple[str, ...] = option((), "repeatable", affects=R)


@dataclass(frozen=True)
class Toy:
    name: str = option(help="required", required=True, grid=True, affects=R)
    count: int = option(3, "an int", affects=R)
    path: Path | None = option(None, "a path", affects=R)
    loud: bool = option(False, "a switch", affects=R)
    quiet: bool = option(True, "on by default: --no-quiet", affects=R)
    either: bool | None = option(None, "--either/--no-either", affects=R)
    mode: bool | None = option(None, "words", words=(("auto", None), ("yes", True), ("no", False)), affects=R)
    pair: tuple[int, int] | None = option(None, "K/N", convert=lambda s: tuple(map(int, s.split("/"))), affects=R)
    named: str = option("x", "its own flag", flag="--other", group="G", affects=R)
    upper: str = option("a", "converted", convert=shout, affects=R)
    no_option: int = 0
    inner: Inner = section(Inner, "INNER", prefix="in-")
    sw: Inner | None = switch(Inner, "on with --sw", prefix="sw-", affects=Affects.OPERATION)


def by_name() -> dict[str, Declared]:
    return {".".join(d.path): d for d in declared(Toy, group="TOP")}


def test_every_option_in_field_order_with_its_sections() -> None:
    assert list(by_name()) == [
        "name", "count", "path", "loud", "quiet", "either", "mode", "pair", "named", "upper",
        "inner.rate", "inner.tags", "sw", "sw.rate", "sw.tags",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "flag", "kind", "default", "group"),
    [
        ("name", "--name", "store", None, "TOP"),
        ("count", "--count", "store", 3, "TOP"),
        ("path", "--path", "store", None, "TOP"),
        ("loud", "--loud", "switch", False, "TOP"),
        ("quiet", "--no-quiet", "negated", True, "TOP"),
        ("either", "--either", "boolean", None, "TOP"),
        ("mode", "--mode", "store", None, "TOP"),
        ("pair", "--pair", "store", None, "TOP"),
        ("named", "--other", "store", "x", "G"),
        ("upper", "--upper", "store", "a", "TOP"),
        ("inner.rate", "--in-rate", "store", 1.5, "INNER"),
        ("inner.tags", "--in-tags", "append", (), "INNER"),
        ("sw", "--sw", "switch", None, "TOP"),
        ("sw.rate", "--sw-rate", "store", 1.5, "TOP"),
        ("sw.tags", "--sw-tags", "append", (), "TOP"),
    ],
)
def test_flag_kind_default_and_group(name: str, flag: str, kind: str, default: object, group: str) -> None:
    d = by_name()[name]
    assert (d.flag, d.kind, d.default, d.group) == (flag, kind, default, group)
    assert d.dest == flag.removeprefix("--").replace("-", "_")


def test_each_option_converts_by_its_type_or_its_own_rule() -> None:
    d = by_name()
    assert d["count"].convert is int and d["path"].convert is Path and d["inner.rate"].convert is float
    assert d["inner.tags"].convert is str  # an append option converts each item
    assert d["mode"].convert is str  # words: the typed word, looked up by value()
    assert d["upper"].convert is shout and d["upper"].convert("a") == "A"
    assert d["pair"].convert("2/5") == (2, 5)


@pytest.mark.parametrize(
    ("name", "parsed", "value"),
    [
        ("name", ["a", "b"], "a"),  # a grid option's comma list: the sweep's base, its first value
        ("name", "a", "a"),
        ("count", [1, 2], [1, 2]),  # no grid: the parsed value as it is
        ("mode", "auto", None),
        ("mode", "yes", True),
        ("mode", "no", False),
        ("quiet", True, False),  # --no-quiet given
        ("quiet", False, True),
        ("either", False, False),
        ("inner.tags", ["a", "b"], ("a", "b")),
        ("inner.tags", [], ()),
        ("loud", True, True),
    ],
)
def test_value_is_the_fields_value_for_what_argparse_parsed(name: str, parsed: object, value: object) -> None:
    assert by_name()[name].value(parsed) == value


def test_an_options_defaults() -> None:
    o = Option("help")
    assert (o.flag, o.group, o.choices, o.grid, o.required, o.const, o.affects) == (
        "",
        None,
        (),
        False,
        False,
        None,
        None,
    )
    assert by_name()["sw"].option.affects is Affects.OPERATION and by_name()["sw"].option.help == "on with --sw"


def test_a_field_without_an_option_is_none_and_a_section_field_is_not_one() -> None:
    fields = {f.name: f for f in dataclasses.fields(Toy)}
    from harness.config.option import declare

    assert declare(Toy, fields["no_option"]) is None
    assert declare(Toy, fields["inner"]) is None
    assert declare(Toy, fields["count"], prefix="p-").flag == "--p-count"  # type: ignore[union-attr]
