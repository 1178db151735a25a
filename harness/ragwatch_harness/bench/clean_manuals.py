"""A second clean corpus, read from manuals the clean-docs bench never samples: FAQs, GNU info, HTML
guides.

`clean_docs` cuts its traces from Python's reference, module docstrings and code, and man pages; the
rules were tuned on what it turned up, so it no longer measures them. Users meet other text: FAQ
pages ("How do I parcel out work among a bunch of worker threads?"), tutorials with numbered steps
and sample output. This corpus is what else the machine holds of that kind, none of it written by
this project:
- the FAQ files and HTML manuals under /usr/share/doc (valgrind, libxslt, libffi, nodejs's API,
  ...);
- the GNU info manuals under /usr/share/info (coreutils, grep, sed, wget, gnupg, ...);
- Perl's bundled POD guides (/usr/share/perl*), and the Rust book, cargo book and FAQs when a Rust
  toolchain installed its documentation (~/.rustup). It is English only. Traces are cut as
  `clean_docs` cuts them (the same passages, with the same filter on passages that name a person),
  so each quarantine or replacement is a false alarm.

    # every quarantined trace, with its rules:
    python -m ragwatch_harness.bench.clean_manuals --traces 1200 --seed 5
"""

from __future__ import annotations

import argparse
import gzip
import html
import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from ragwatch_harness.bench.clean_docs import Document, as_trace, build_clean_traces

_DOC = Path("/usr/share/doc")
_INFO = Path("/usr/share/info")
_PERL = (Path("/usr/share/perl"), Path("/usr/share/perl5"))
_RUST_DOCS = (
    "book",
    "cargo",
    "edition-guide",
    "complement-lang-faq.html",
    "complement-design-faq.html",
    "complement-project-faq.html",
)
"""What of a Rust toolchain's documentation is prose for people; the API pages are generated
listings."""
_HTML_SKIPPED = ("libjs-", "libjs_")
"""JavaScript libraries' HTML is their demo pages: markup and lorem ipsum, not documentation."""


def read_text(path: Path) -> str:
    """A documentation file's text, gunzipped where it is compressed; empty where it cannot be
    read."""
    try:
        raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError):
        return ""
    return raw.decode("utf-8", "replace")


class _HtmlText(HTMLParser):
    """The text a reader sees: blocks apart, `<pre>` kept line for line, scripts, styles and
    navigation out."""

    _BLOCKS = frozenset(
        (
            "p",
            "div",
            "li",
            "dt",
            "dd",
            "tr",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "pre",
            "table",
            "blockquote",
            "section",
            "br",
            "hr",
            "ul",
            "ol",
            "dl",
        )
    )
    _HIDDEN = frozenset(("script", "style", "nav", "head", "noscript"))

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self._HIDDEN:
            self.hidden += 1
        if tag == "pre":
            self.pre += 1
        if tag in self._BLOCKS:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag):
        if tag in self._HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_text(source: str) -> str:
    parser = _HtmlText()
    parser.feed(source)
    parser.close()
    text = html.unescape("".join(parser.parts))
    return re.sub(r"\n[ \t]*(?:\n[ \t]*)+", "\n\n", text).strip()


def info_text(source: str) -> str:
    """An info file's nodes without their navigation lines and menus' markers."""
    nodes = source.split("\x1f")
    kept = []
    for node in nodes:
        lines = [
            line
            for line in node.split("\n")
            if not line.startswith(("File: ", "Tag Table:", "End Tag Table", "Ref:"))
        ]
        kept.append("\n".join(lines))
    return "\n\n".join(kept)


_POD_CODE = re.compile(r"[A-Z]<<+\s(.*?)\s>>+|[A-Z]<([^<>]*)>")


def pod_text(source: str) -> str:
    """POD as perldoc shows it: headings and items as lines, formatting codes (`C<...>`) as their
    text."""
    out = []
    for line in source.split("\n"):
        if line.startswith("=cut") or line.startswith(
            ("=over", "=back", "=begin", "=end", "=for", "=pod", "=encoding")
        ):
            continue
        if line.startswith(("=head", "=item")):
            line = line.split(None, 1)[1] if " " in line else ""
        for _ in range(3):  # nested codes: B<C<x>>
            line = _POD_CODE.sub(lambda m: m.group(1) or m.group(2) or "", line)
        out.append(line)
    return "\n".join(out)


def _documents(paths: Iterator[Path], source: str, convert) -> Iterator[Document]:
    for path in sorted(set(paths)):
        if path.is_file():
            yield Document("en", source, str(path), lambda path=path: convert(read_text(path)))


def manual_documents() -> dict[str, list[Document]]:
    """The corpus's documents, one source per kind of manual (each drawn as often as the others)."""
    faqs = (
        p
        for p in _DOC.rglob("*")
        if re.search(r"faq", p.name, re.I) and p.suffix in ("", ".gz", ".txt")
    )
    pages = (p for p in _DOC.rglob("*.html") if not any(s in str(p) for s in _HTML_SKIPPED))
    rust = (
        p
        for root in Path.home().glob(".rustup/toolchains/*/share/doc/rust/html")
        for name in _RUST_DOCS
        for p in ([root / name] if name.endswith(".html") else (root / name).rglob("*.html"))
    )
    documents = [
        *_documents(faqs, "faq", lambda text: text),
        *_documents(pages, "html", html_text),
        *_documents((p for p in _INFO.glob("*.info*.gz")), "info", info_text),
        *_documents(
            (p for root in _PERL if root.is_dir() for p in root.rglob("*.pod")), "pod", pod_text
        ),
        *_documents(rust, "rust", html_text),
    ]
    return {"en": documents, "es": []}


def main() -> None:
    from pipelines.privacy.anonymizer import Anonymizer
    from pipelines.privacy.residual import residual_pii_reasons
    from ragwatch_harness.bench.anonymize import row_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--traces", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rows = build_clean_traces(args.traces, seed=args.seed, documents=manual_documents())
    anonymizer = Anonymizer(b"ragwatch-bench-key")
    quarantined, replaced, by_source = 0, Counter(), Counter(row["source"] for row in rows)
    for i, row in enumerate(rows):
        anonymized, counts = anonymizer.anonymize_trace(as_trace(row, i))
        replaced.update(counts)
        names = (
            "question",
            "answer",
            *(f"contexts[{k}]" for k in range(len(row["contexts"]))),
            "metadata",
        )
        fields = {
            name: reasons
            for name, text in zip(names, row_texts(anonymized))
            if (reasons := residual_pii_reasons(text))
        }
        if fields:
            quarantined += 1
            print(f"QUARANTINED {row['document']} ({row['source']}): {fields}")
    print(
        f"{len(rows)} traces {dict(by_source)}: {quarantined} quarantined ({quarantined / len(rows):.2%}); "
        f"replacements by type {dict(replaced)}"
    )


if __name__ == "__main__":
    main()
