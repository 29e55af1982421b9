"""The documentation's shape: a short README, a nav whose pages exist, relative links that
resolve, and no reference to files outside the repository. Fast: mkdocs is not run."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# [text](target) and ![alt](target); the target up to a space, ")" or "#".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]*)(?:#[^)\s]*)?\)")
SKIPPED_DIRS = {".git", ".venv", ".venv-gpu", "site", "node_modules", "__pycache__"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".sh", ".ipynb", ".cfg", ".txt"}


def markdown_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def nav_pages() -> list[str]:
    """Every `.md` path named in mkdocs.yml's nav (one `title: page.md` per line)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r":\s*([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)


def repository_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in relative.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            files.append(path)
    return files


def test_readme_is_a_short_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"


def test_every_nav_page_exists() -> None:
    pages = nav_pages()
    assert "index.md" in pages and "design.md" in pages
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml nav names missing pages: {missing}"


def test_every_docs_page_is_in_the_nav() -> None:
    named = set(nav_pages())
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert not pages - named, f"pages outside the nav: {sorted(pages - named)}"


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # an anchor on the same page, or a URL
        if not (page.parent / target).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to missing files {broken}"


def test_link_pattern_finds_links() -> None:
    text = "see [Traces](traces.md#formats), ![fig](figures/a.png) and [web](https://x.org)"
    assert LINK.findall(text) == ["traces.md", "figures/a.png", "https://x.org"]


def test_nothing_refers_outside_the_repository() -> None:
    needles = ("DESIGN" + ".md", "../" + "shared")  # spelled apart so this file passes
    offenders = []
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}: {n}" for n in needles if n in text]
    assert not offenders, f"references to files outside the repository: {offenders}"


def test_the_design_quotes_the_import_contracts_as_they_are() -> None:
    """docs/design.md quotes pyproject.toml's import-linter section verbatim: CI checks the
    contracts, this keeps the quote of them true."""
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = project[project.index("[tool.importlinter]") :].strip()
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    start = design.index("```toml\n[tool.importlinter]") + len("```toml\n")
    assert design[start : design.index("```", start)].strip() == section
