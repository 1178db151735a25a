"""Read a folder of Markdown, HTML and text files into documents made of titled sections.

A section is what a heading introduces; its paragraphs are the units the chunker packs, so a
fenced code block or a list item is never cut in half. Text before the first heading belongs to
a section named after the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

SUFFIX_TYPES = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".txt": "txt"}

# Column 0 only: the demo corpus indents code by three spaces and its comments start with '#'.
_ATX = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# libyaml's loader parses front matter several times faster than the pure-Python one, same result.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
# Heading markup that is not the heading's text: attribute lists ("Setup {#setup}", Pandoc and
# MkDocs) and a permalink sign left at the end ("Setup¶"); in Markdown also inline HTML ("<a
# name=x></a>Setup"), which CommonMark renders as tags, not text.
_HEADING_SUFFIX = re.compile(r"\s*\{[#.][^}]*\}\s*$|\s*[¶§]\s*$")
_INLINE_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    path: str
    """Relative POSIX path inside the corpus folder: the document's identity."""
    type: str
    date: str
    """ISO date: front-matter `date:` when present, else the file's modification day (UTC)."""
    title: str
    sections: tuple[Section, ...]
    language: str | None = None
    """Declared by front matter (`lang:` / `language:`); detected per chunk when absent."""


def iter_documents(folder: Path) -> Iterator[Document]:
    """Every supported file under `folder`, recursively, in path order; hidden entries skipped."""
    for path, name in supported_files(folder):
        yield read_document(path, name)


def supported_files(folder: Path) -> Iterator[tuple[Path, str]]:
    """(path, name relative to `folder`) of every file `iter_documents` reads, in the same order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"corpus folder {folder} does not exist or is not a directory")
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and path.suffix.lower() in SUFFIX_TYPES and not _hidden(relative):
            yield path, relative.as_posix()


def read_document(path: Path, name: str) -> Document:
    raw = _decode(path.read_bytes())
    modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).date()
    return parse_document(raw, name, SUFFIX_TYPES[path.suffix.lower()], modified)


def parse_document(raw: str, name: str, doc_type: str, default_date: date) -> Document:
    fallback_title = Path(name).stem.replace("-", " ").replace("_", " ")
    if doc_type == "html":
        parser = _HTMLSections()
        parser.feed(raw)
        parser.close()
        meta = parser.meta
        sections = parser.sections()
        title = meta.get("title") or next((s.title for s in sections if s.title), fallback_title)
    else:
        meta, body = _front_matter(raw)
        title = str(meta.get("title") or "") or fallback_title
        sections = (
            _markdown_sections(body)
            if doc_type == "md"
            else [Section("", tuple(_paragraphs(body)))]
        )
        if doc_type == "md" and not meta.get("title"):
            title = next((s.title for s in sections if s.title), title)
    titled = tuple(Section(s.title or title, s.paragraphs) for s in sections if s.paragraphs)
    language = meta.get("language") or meta.get("lang")
    return Document(
        path=name,
        type=doc_type,
        date=_iso_date(meta.get("date"), default_date),
        title=str(title),
        sections=titled,
        language=str(language).lower()[:2] if language else None,
    )


def heading_text(raw: str) -> str:
    """A heading's words without the markup around them."""
    return " ".join(_HEADING_SUFFIX.sub("", raw).split())


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _decode(data: bytes) -> str:
    # Spanish teams still have cp1252 files around; one of them must not stop the whole index.
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _front_matter(raw: str) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(raw)
    if not match:
        return {}, raw
    try:
        meta = yaml.load(match.group(1), Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return {}, raw
    return (meta if isinstance(meta, dict) else {}), raw[match.end() :]


def _iso_date(value: Any, default: date) -> str:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            pass
    return default.isoformat()


def _paragraphs(text: str) -> list[str]:
    return [block.strip("\n") for block in re.split(r"\n\s*\n", text) if block.strip()]


def _markdown_sections(body: str) -> list[Section]:
    sections: list[tuple[str, list[str]]] = [("", [])]
    paragraph: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if paragraph:
            sections[-1][1].append("\n".join(paragraph).strip("\n"))
            paragraph.clear()

    for line in body.splitlines():
        if fence:
            paragraph.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)[:3]
            paragraph.append(line)
            continue
        heading = _ATX.match(line)
        if heading:
            flush()
            sections.append((heading_text(_INLINE_TAG.sub("", heading.group(2))), []))
        elif _SETEXT.match(line) and len(paragraph) == 1:
            title = paragraph.pop().strip()
            sections.append((title, []))
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
    flush()
    return [
        Section(title, tuple(p for p in paragraphs if p.strip())) for title, paragraphs in sections
    ]


class _HTMLSections(HTMLParser):
    """Text of an HTML page as sections: h1-h6 open a section, block elements end a paragraph."""

    HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
    BLOCKS = {
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "br",
        "tr",
        "table",
        "pre",
        "blockquote",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "aside",
        "figure",
        "figcaption",
        "hr",
        "details",
        "summary",
        "form",
        "fieldset",
    }
    SKIPPED = {"script", "style", "noscript", "template", "svg", "nav", "head"}
    # Permalinks that documentation generators append to headings and definitions (Sphinx and MkDocs
    # "headerlink", Texinfo "copiable-anchor", GitHub "anchor"): a "¶" or "#" that is markup, not
    # text.
    PERMALINK_CLASSES = {
        "headerlink",
        "copiable-anchor",
        "anchor",
        "permalink",
        "header-anchor",
        "anchorjs-link",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, str] = {}
        self._sections: list[tuple[str, list[str]]] = [("", [])]
        self._text: list[str] = []
        self._heading: list[str] | None = None
        self._skip_depth = 0
        self._pre_depth = 0
        self._in_title = False
        self._link_depth = 0
        """Open <a> elements inside a permalink (its depth, 0 outside one)."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "meta" and attributes.get("name", "").lower() in {"date", "language"}:
            self.meta[attributes["name"].lower()] = attributes.get("content") or ""
        elif tag == "html" and attributes.get("lang"):
            self.meta.setdefault("language", attributes["lang"] or "")
        if self._link_depth and tag == "a":
            self._link_depth += 1
        elif tag == "a" and self.PERMALINK_CLASSES & set((attributes.get("class") or "").split()):
            self._link_depth = 1
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIPPED:
            self._skip_depth += 1
        elif tag in self.HEADINGS:
            self._end_paragraph()
            self._heading = []
        elif tag in self.BLOCKS:
            self._end_paragraph()
            if tag == "pre":
                self._pre_depth += 1
            elif tag == "li":
                self._text.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._link_depth:
            self._link_depth -= 1
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIPPED:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in self.HEADINGS and self._heading is not None:
            title = heading_text("".join(self._heading))
            self._heading = None
            self._sections.append((title, []))
        elif tag in self.BLOCKS:
            self._end_paragraph()
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.meta["title"] = self.meta.get("title", "") + data.strip()
        elif self._skip_depth or self._link_depth:
            return
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self._text.append(data)

    def _end_paragraph(self) -> None:
        text = "".join(self._text)
        self._text.clear()
        text = text.strip("\n") if self._pre_depth else " ".join(text.split())
        if text.strip() and text.strip() != "-":
            self._sections[-1][1].append(text)

    def sections(self) -> list[Section]:
        self._end_paragraph()
        return [Section(title, tuple(paragraphs)) for title, paragraphs in self._sections]
