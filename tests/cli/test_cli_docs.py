"""The docs stand alone (a reader needs nothing outside this repository): the README, docs/, the package's docstrings and every ``--help``
text cite the paper by
section, table or equation and name no file that does not ship in this repository."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: a Markdown link's target, and a bare ``name.md`` outside code (``prompts.md §1``, ``../x/y.md``)
LINK = re.compile(r"\]\(([^)#\s]+)")
BARE = re.compile(r"(?<![\w/.-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*\.md)\b")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def _ships(path: Path) -> bool:
    """Whether ``path`` is a file of this repository (a checkout's ``shared/`` folder is not)."""
    resolved = path.resolve()
    inside = resolved.is_relative_to(ROOT) and not resolved.is_relative_to(ROOT / "shared")
    return inside and resolved.exists()


def _missing(text: str, base: Path) -> list[str]:
    """The files ``text`` points at that this repository does not hold: link targets (relative to
    ``base``, the folder of the text) and bare ``*.md`` names outside code spans (relative to
    ``base`` or the repository; an output such as ``index.md`` is written as code), plus any
    mention of a checkout's ``shared/`` folder."""
    prose = CODE.sub(" ", text)  # `[x](url)` in a code span shows syntax, it links nowhere
    links = [m.group(1) for m in LINK.finditer(prose) if "://" not in m.group(1)]
    bare = [m.group(1) for m in BARE.finditer(prose)]
    found = [name for name in links if not _ships(base / name)]  # a link resolves where it stands
    found += [name for name in bare if not (_ships(base / name) or _ships(ROOT / name))]
    if "shared/" in text:
        found.append("shared/…")
    return found


def _help_texts() -> dict[str, str]:
    """Every command's help, epilog and option/argument help, sub-commands and components
    included (each build sub-command is made on demand)."""
    from typer.main import get_command

    from biovqa.cli.main import app

    texts: dict[str, str] = {}

    def walk(command: Any, name: str, ctx: Any) -> None:
        parts = [command.help or "", command.epilog or "", command.short_help or ""]
        parts += [getattr(p, "help", None) or "" for p in command.params]
        texts[name] = "\n".join(parts)
        if hasattr(command, "list_commands"):  # a group (typer ≥ 0.29 has its own click copy)
            for sub in command.list_commands(ctx):
                child = command.get_command(ctx, sub)
                if child is not None:
                    walk(child, f"{name} {sub}", type(ctx)(child, parent=ctx, info_name=sub))

    root = get_command(app)
    walk(root, "biovqa", root.make_context("biovqa", ["--help"], resilient_parsing=True))
    return texts


def test_readme_names_the_paper_and_no_missing_file() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "arXiv:2611.05559" in readme and "@misc{" in readme
    assert "How Finely Can Vision–Language Models See Biology?" in " ".join(readme.split())
    assert _missing(readme, ROOT) == []


def test_docs_name_no_missing_file() -> None:
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) > 5
    bad = {page.name: _missing(page.read_text(encoding="utf-8"), page.parent) for page in pages}
    assert {name: refs for name, refs in bad.items() if refs} == {}


#: a string literal that is only a file name (``out / "index.md"``: a file the package writes)
FILE_LITERAL = re.compile(r"""(["'])[\w./-]+\.md\1""")


def test_source_docstrings_and_comments_name_no_missing_file() -> None:
    sources = sorted((ROOT / "src" / "biovqa").rglob("*.py"))
    texts = {path: path.read_text(encoding="utf-8") for path in sources}
    written = {m.group(0)[1:-1] for text in texts.values() for m in FILE_LITERAL.finditer(text)}
    bases = (ROOT, ROOT / "docs", ROOT / "src", ROOT / "src" / "biovqa")
    bad: dict[str, list[str]] = {}
    for path, text in texts.items():
        names = [m.group(1) for m in BARE.finditer(FILE_LITERAL.sub(" ", text))]
        missing = [name for name in names if name not in written  # a file the package writes
                   and not any(_ships(base / name) for base in (*bases, path.parent))]
        if "shared/" in text:
            missing.append("shared/…")
        if missing:
            bad[str(path.relative_to(ROOT))] = missing
    assert bad == {}


def test_help_texts_name_no_missing_file() -> None:
    texts = _help_texts()
    assert {"biovqa score", "biovqa build c1", "biovqa build c3", "biovqa taxonomy index"} <= set(texts)
    bad = {name: _missing(text, ROOT) for name, text in texts.items()}
    assert {name: refs for name, refs in bad.items() if refs} == {}


def test_the_check_finds_a_missing_file() -> None:
    assert _missing("see prompts.md §1 and ../shared/spec/bagel.md", ROOT) == [
        "prompts.md", "../shared/spec/bagel.md", "shared/…"]
    assert _missing("see [C4](docs/c4.md), README.md and the report's `index.md`", ROOT) == []
