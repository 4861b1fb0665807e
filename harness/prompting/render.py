"""Render templates/<dataset>/<name>.j2 into prompt text. Templates hold text and loops, no decisions."""

from __future__ import annotations

import hashlib
import os
import traceback
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from harness.config.paper import PAPER, paper_template
from harness.inputs import check_regular
from harness.types import Example, HarnessError


def _templates_dir() -> Path:
    """The bundled templates: `harness/templates` where the package is installed from a wheel (setup.py maps the
    top-level folder there), the checkout's top-level `templates/` otherwise."""
    installed = Path(__file__).resolve().parents[1] / "templates"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[2] / "templates"


TEMPLATES_DIR = _templates_dir()
INSTRUCTIONS = ("none", "short", "long")
# Templates that are a paper's layout for an instruction level: T5 layout (Deshpande et al. 2023, the
# reference code's T5 variant) and Tu et al. 2024's Figure 8/9 prompts, which carry the short instruction.
TEMPLATE_INSTR = {
    "t5-none": "none",
    "t5-short": "short",
    "t5-long": "long",
    "tu-base": "short",
    "qa": "short",
    "qa-answer": "short",  # qa-embed runs record the answer template
}


def template_name(dataset: str, instr: str, template: str | None = None, model: str = "") -> str:
    """The template a run uses: an explicit --template wins, else the instruction level. `--template paper`: the
    layout the paper used for the model's family (harness/config/paper.py: T5 layout for Flan-T5, Flan-UL2 and
    Tk-Instruct, the GPT layout otherwise), at the instruction level."""
    if template == PAPER:
        if instr not in INSTRUCTIONS:
            raise HarnessError(f"unknown instruction level {instr!r}; choose from {', '.join(INSTRUCTIONS)}")
        template = paper_template(model, instr)
    if template is None:
        if instr not in INSTRUCTIONS:
            raise HarnessError(f"unknown instruction level {instr!r}; choose from {', '.join(INSTRUCTIONS)}")
        template = instr
    return template if template.endswith(".j2") else f"{dataset}/{template}.j2"


class PromptRenderer:
    """One compiled template, rendered with StrictUndefined so a missing field fails loudly.

    A user's own file (`--template path/to/mine.j2`) is looked up with a search path of its own folder, then
    the bundled templates folder (and its `<dataset>/` folder), so a copy of a bundled template, which
    `{% include "csts/none.j2" %}`s its siblings, works as it is. Every way a template can fail (a missing
    include, a syntax error, bytes that are not UTF-8, an exception raised while rendering) is a
    HarnessError naming the template, found here or at the first render, before any request is sent.
    """

    def __init__(self, name: str, templates_dir: Path = TEMPLATES_DIR, dataset: str | None = None) -> None:
        path = Path(name)
        search = [templates_dir] + ([templates_dir / dataset] if dataset else [])
        if name.endswith(".j2") and os.path.lexists(path) and not path.is_file():
            check_regular(path, "template")  # a directory or a FIFO named *.j2: say so (and never block on it)
        if path.is_file():  # a user's own template file
            search, name = [path.resolve().parent, *search], path.name
        self.env = _Environment(
            loader=jinja2.FileSystemLoader(search),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            # Templates are read once: every prompt of the run comes from the sources hashed into config.json,
            # and no render stats the files again (an include would, per prompt, with auto_reload on).
            auto_reload=False,
            cache_size=-1,  # a plain dict of this renderer's few templates: an include looks one up per prompt
        )
        self.name = name
        try:
            self.template = self.env.get_template(name)
        except jinja2.TemplateNotFound as e:
            if e.name != name:
                raise HarnessError(f"template {name}: {_describe(e, name)}") from None
            known = sorted(p.relative_to(templates_dir).as_posix() for p in Path(templates_dir).rglob("*.j2"))
            raise HarnessError(f"unknown template {name!r}; available: {', '.join(known)}") from None
        except Exception as e:  # syntax errors, bad bytes, unreadable files: all the user's input
            raise HarnessError(f"template {name}: {_describe(e, name)}") from None
        self._hashes = self._collect_hashes()  # also checks every included template exists and parses

    def render(self, query: Example, shots: Sequence[Example], **extra: object) -> str:
        """The exact prompt text for one query."""
        try:
            return self.template.render(query=query, shots=shots, **extra)
        except Exception as e:  # a template is user code: {{ 1/0 }}, a missing include, ...
            raise HarnessError(f"template {self.name}{_line(e)}: {_describe(e, self.name)}") from None

    def hashes(self) -> dict[str, str]:
        """sha256 of this template and every template it includes or imports, for config.json."""
        return dict(self._hashes)

    def _collect_hashes(self) -> dict[str, str]:
        assert self.env.loader is not None
        seen: dict[str, str] = {}
        todo = [self.name]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            try:
                source = self.env.loader.get_source(self.env, name)[0]
                refs = jinja2.meta.find_referenced_templates(self.env.parse(source, name=name))
            except Exception as e:  # an include that is missing, unreadable or broken
                raise HarnessError(f"template {self.name}: {_describe(e, self.name)}") from None
            seen[name] = hashlib.sha256(source.encode()).hexdigest()
            todo.extend(r for r in refs if r is not None)
        return dict(sorted(seen.items()))


class _Environment(jinja2.Environment):
    """jinja2's Environment with each template's globals in one plain dict instead of a ChainMap over the
    environment's: every render (and every include) builds a context from them, and walking a ChainMap in Python
    was a third of a short prompt's render time. The names are the same: jinja2 asks that globals not change once
    templates are loaded, and nothing here changes them. Kept because it is measured at about a tenth of the
    9-cell grid's CPU (issue 22: the grid's 25,506 prompts took 0.45 s with it, 0.73 s without, min of 5)."""

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


def _describe(e: BaseException, name: str) -> str:
    """One line for a template failure, whatever raised it."""
    match e:
        case jinja2.TemplateNotFound():
            return f"included template {e.name!r} not found (looked beside the template, then in {TEMPLATES_DIR})"
        case jinja2.TemplateSyntaxError():
            where = "" if e.name in (None, name) else f"included {e.name} "
            return f"{where}line {e.lineno}: {e.message}"
        case jinja2.UndefinedError():
            return str(e.message)
        case UnicodeDecodeError():
            return f"not UTF-8 text (byte {e.start}); save the template as UTF-8"
        case OSError():
            return f"cannot read it: {e.strerror}"
        case _:
            return f"{type(e).__name__}: {e}"


def _line(e: BaseException) -> str:
    """' line N' of the template line that raised (Jinja maps template code to template lines), else ''."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.endswith(".j2")]
    return f" line {frames[-1].lineno}" if frames else ""
