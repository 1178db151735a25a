"""Clean technical traffic: traces cut from the documentation installed on this machine, no PII
planted.

What an engineer pastes into a question and what a RAG assistant retrieves for it, in both
languages:
- English: Python's language reference (`pydoc_data`, on every machine), the docstrings and the code
  of the installed Python modules (stdlib and site-packages), and English man pages;
- Spanish: the Spanish man pages (Debian's `manpages-es`, `man` renders them).

Floats, version strings, escapes, hashes, documentation addresses (RFC 5737, RFC 3849), digit runs
in code and `Authorization:` examples are all in there, as they are in real technical questions.
Anything that does name a person is left out at the source: man-page sections on authors,
translators, copyright and bug reports, and any passage with an e-mail-like "@" or an author or
copyright line. What remains is a false-positive corpus: every replacement the anonymizer makes in
it and every trace the residual check quarantines is a false alarm.

A trace takes consecutive passages of one document: the first as the question, the next as the
answer, one to three more as retrieved contexts. Same machine, same seed, same traces; the test
fixture `tests/data/clean_docs.jsonl.gz` was built once with `python -m
ragwatch_harness.bench.clean_docs`.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import random
import re
import subprocess
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.core.records import Context, Trace

PASSAGE_CHARS = (160, 900)
"""A passage gathers whole blocks (blank-line separated) up to the upper bound; shorter ones merge
on."""
QUESTION_CHARS = 500
MAN_WIDTH = "80"
_MAN_DIRS = {"en": Path("/usr/share/man"), "es": Path("/usr/share/man/es")}
_MAN_SECTIONS = ("man1", "man5", "man7", "man8")
_DROPPED_SECTIONS = re.compile(
    r"(?:AUTH?OR(?:E?S)?|AUTHORS?|TRADUCCI[ÓO]N|TRANSLATION|COPYRIGHT|DERECHOS? DE AUTOR|COLOF[ÓO]N|COLOPHON"
    r"|INFORMAR (?:DE|SOBRE) (?:ERRORES|FALLOS)|REPORTING BUGS|BUGS|ERRORES|HISTORIA|HISTORY)\b.*"
)
"""Man-page sections that name people (authors, translators, maintainers) rather than document."""
_PERSONAL = re.compile(
    r"@|\b(?:copyright|author|autor|written by|escrito por|maintainer|contributed by|\(c\))", re.I
)
AUTHOR_LINES = re.compile(_PERSONAL.pattern.removeprefix("@|"), re.IGNORECASE)
"""The same without "@": for a corpus that keeps decorators, matrix products and `git@host` to test
the at-sign rule."""
_PII_PACKAGES = frozenset(
    ("faker", "phonenumbers", "stdnum", "presidio_analyzer", "presidio_anonymizer", "mimesis")
)
"""Packages whose data and examples are PII on purpose (fake names, example phones, valid ids)."""
_SECTION_HEADING = re.compile(r"^[A-ZÁÉÍÓÚÑ][A-ZÁÉÍÓÚÑ0-9 ,/\-]+$")


@dataclass(frozen=True)
class Document:
    language: str
    source: str
    """"reference", "docstrings", "code" or "man"."""
    name: str
    text: Callable[[], str]


# --- documents ------------------------------------------------------------------------------------
def _reference() -> Iterator[Document]:
    from pydoc_data.topics import topics

    for name in sorted(topics):
        yield Document("en", "reference", f"pydoc/{name}", lambda name=name: topics[name])


def _python_files() -> list[Path]:
    roots = {Path(sysconfig.get_paths()[key]) for key in ("stdlib", "purelib")}
    files = set()
    for root in roots:
        for path in root.rglob("*.py"):
            if "__pycache__" not in path.parts and _PII_PACKAGES.isdisjoint(path.parts):
                files.add(path)
    return sorted(files)


def _docstrings(path: Path) -> str:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return ""
    nodes = [
        tree,
        *(
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ),
    ]
    return "\n\n".join(doc for node in nodes if (doc := ast.get_docstring(node)))


def _code(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""


def _python_modules() -> Iterator[Document]:
    for path in _python_files():
        yield Document("en", "docstrings", str(path), lambda path=path: _docstrings(path))
        yield Document("en", "code", str(path), lambda path=path: _code(path))


def rendered_man_page(path: Path) -> str:
    """The page as `man` prints it, without its header and footer lines and the sections on
    people."""
    env = {
        **os.environ,
        "MANWIDTH": MAN_WIDTH,
        "MAN_KEEP_FORMATTING": "",
        "GROFF_NO_SGR": "1",
        "LC_ALL": "C.UTF-8",
    }
    try:
        rendered = subprocess.run(
            ["man", "-E", "UTF-8", "-l", str(path)],
            capture_output=True,
            env=env,
            timeout=30,
            check=False,
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    plain = re.sub(r".\x08", "", rendered)  # overstrike bold and underline
    lines = plain.splitlines()[1:-1]
    kept, dropping = [], False
    for line in lines:
        if _SECTION_HEADING.match(line):
            dropping = _DROPPED_SECTIONS.fullmatch(line.strip()) is not None
        if not dropping:
            kept.append(line)
    return "\n".join(kept)


def _man_pages(language: str) -> Iterator[Document]:
    root = _MAN_DIRS[language]
    for section in _MAN_SECTIONS:
        folder = root / section
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    yield Document(
                        language,
                        "man",
                        f"man/{language}/{section}/{path.name}",
                        lambda p=path: rendered_man_page(p),
                    )


def installed_documents() -> dict[str, list[Document]]:
    """The documentation of this machine by language; a language may have none (no man pages)."""
    documents = [*_reference(), *_python_modules(), *_man_pages("en"), *_man_pages("es")]
    return {language: [d for d in documents if d.language == language] for language in ("en", "es")}


# --- passages and traces --------------------------------------------------------------------------
def passages(text: str, personal: re.Pattern[str] = _PERSONAL) -> list[str]:
    """`text` cut into passages of whole blank-line-separated blocks, common indentation removed; a
    passage that names a person (by default an e-mail, an author or copyright line: `personal`) is
    dropped."""
    blocks = [
        _dedented(b) for b in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")) if b.strip()
    ]
    out, current = [], ""
    for block in blocks:
        for piece in _pieces(block, PASSAGE_CHARS[1]):
            if current and len(current) + len(piece) + 2 > PASSAGE_CHARS[1]:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
            if len(current) >= PASSAGE_CHARS[0]:
                out.append(current)
                current = ""
    if current:
        out.append(current)
    return [p for p in out if len(p) >= 40 and not personal.search(p)]


def _dedented(block: str) -> str:
    lines = block.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:].rstrip() for line in lines)


def _pieces(block: str, limit: int) -> Iterator[str]:
    """A block longer than `limit` cut at line ends (a line longer than `limit` is cut where it
    must)."""
    current = ""
    for line in block.split("\n"):
        while len(line) > limit:
            yield line[:limit]
            line = line[limit:]
        if current and len(current) + len(line) + 1 > limit:
            yield current
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        yield current


def _question(passage: str) -> str:
    if len(passage) <= QUESTION_CHARS:
        return passage
    cut = passage.rfind("\n", 0, QUESTION_CHARS)
    return passage[: cut if cut > 40 else QUESTION_CHARS]


def build_clean_traces(
    n: int,
    *,
    seed: int,
    documents: dict[str, list[Document]] | None = None,
    personal: re.Pattern[str] = _PERSONAL,
) -> list[dict]:
    """`n` traces as plain dicts, half in each language that has documents, drawn with `seed`;
    within a language each source (reference, docstrings, code, man pages) is as likely.

    Documents are drawn at random and rendered only when drawn, so a thousand traces read a few
    hundred pages, not every page on the machine. `personal`: what drops a passage (see `passages`).
    """
    documents = installed_documents() if documents is None else documents
    languages = [language for language in ("en", "es") if documents[language]]
    by_source = {
        language: [
            [d for d in documents[language] if d.source == source]
            for source in sorted({d.source for d in documents[language]})
        ]
        for language in languages
    }
    rng = random.Random(seed)
    rendered: dict[str, list[str]] = {}
    traces = []
    for i in range(n):
        language = languages[i % len(languages)]
        for _attempt in range(200):
            document = rng.choice(rng.choice(by_source[language]))
            if document.name not in rendered:
                rendered[document.name] = passages(document.text(), personal)
            found = rendered[document.name]
            if len(found) >= 3:
                break
        else:
            raise RuntimeError(f"no {language} document on this machine has three passages")
        size = min(len(found), rng.randint(3, 5))
        first = rng.randint(0, len(found) - size)
        question, answer, *contexts = found[first : first + size]
        traces.append(
            {
                "language": language,
                "source": document.source,
                "document": document.name,
                "question": _question(question),
                "answer": answer,
                "contexts": contexts,
            }
        )
    return traces


def as_trace(row: dict, index: int) -> Trace:
    return Trace(
        trace_id=f"clean-{index:05d}",
        ts=datetime(2026, 11, 28, tzinfo=UTC) + timedelta(seconds=index),
        question=row["question"],
        answer=row["answer"],
        contexts=[
            Context(chunk_id=f"{row['document']}#{k}", text=text, score=0.5)
            for k, text in enumerate(row["contexts"])
        ],
        model="qwen2.5-7b-instruct",
        app="docs-assistant",
        language=row["language"],
        metadata={"channel": "web", "source": row["source"]},
    )


def load_clean_traces(path: Path) -> list[Trace]:
    """The traces of a corpus written by `write_clean_traces` (gzip-compressed JSON lines)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [as_trace(json.loads(line), i) for i, line in enumerate(lines)]


def write_clean_traces(rows: list[dict], path: Path) -> None:
    # mtime=0: the same traces give the same bytes, so a rebuild that changes nothing changes no
    # file.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        for row in rows:
            packed.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    write_clean_traces(build_clean_traces(args.traces, seed=args.seed), args.out)


if __name__ == "__main__":
    main()
