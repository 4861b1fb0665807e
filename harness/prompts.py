"""Render templates/<dataset>/<name>.j2 into prompt text. Templates hold text and loops, no decisions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import jinja2
import jinja2.meta

from harness.types import Example, HarnessError

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
INSTRUCTIONS = ("none", "short", "long")


def template_name(dataset: str, instr: str, template: str | None = None) -> str:
    """The template a run uses: an explicit --template wins, else the instruction level."""
    if template is None:
        if instr not in INSTRUCTIONS:
            raise HarnessError(f"unknown instruction level {instr!r}; choose from {', '.join(INSTRUCTIONS)}")
        template = instr
    return template if template.endswith(".j2") else f"{dataset}/{template}.j2"


class PromptRenderer:
    """One compiled template, rendered with StrictUndefined so a missing field fails loudly."""

    def __init__(self, name: str, templates_dir: Path = TEMPLATES_DIR) -> None:
        path = Path(name)
        if path.is_file():  # a user's own template file
            templates_dir, name = path.resolve().parent, path.name
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(templates_dir),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
        )
        self.name = name
        try:
            self.template = self.env.get_template(name)
        except jinja2.TemplateNotFound:
            known = sorted(p.relative_to(templates_dir).as_posix() for p in Path(templates_dir).rglob("*.j2"))
            raise HarnessError(f"unknown template {name!r}; available: {', '.join(known)}") from None
        except jinja2.TemplateSyntaxError as e:
            raise HarnessError(f"template {name} line {e.lineno}: {e.message}") from None

    def render(self, query: Example, shots: Sequence[Example], **extra: object) -> str:
        """The exact prompt text for one query."""
        try:
            return self.template.render(query=query, shots=shots, **extra)
        except jinja2.UndefinedError as e:
            raise HarnessError(f"template {self.name}: {e.message}") from None

    def hashes(self) -> dict[str, str]:
        """sha256 of this template and every template it includes or imports, for config.json."""
        assert self.env.loader is not None
        seen: dict[str, str] = {}
        todo = [self.name]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            source = self.env.loader.get_source(self.env, name)[0]
            seen[name] = hashlib.sha256(source.encode()).hexdigest()
            refs = jinja2.meta.find_referenced_templates(self.env.parse(source))
            todo.extend(r for r in refs if r is not None)
        return dict(sorted(seen.items()))
