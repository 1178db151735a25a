"""A third clean corpus, none of it read by `clean_docs` or `clean_manuals`, in two halves to tune
the rules on one and report them on the other, and a second report set read after both.

- English: the installed Python packages' own descriptions (the README each wheel ships in its
  METADATA), and for tuning only, the C library's and Perl's manual pages (sections 2 and 3, which
  `clean_docs` does not read);
- Spanish: Debian's Spanish manual pages (manpages-es and manpages-es-dev: commands, system calls,
  the C library).

A package or a page falls in one half by a hash of its name, so the halves share no document. The
Spanish pages come from the Debian packages extracted, not installed, so `clean_docs` keeps reading
what it read:

    apt-get download manpages-es manpages-es-dev
    for deb in manpages-es*.deb; do dpkg-deb -x "$deb" /tmp/man-es; done
    python -m ragwatch_harness.bench.clean_heldout --set report \
        --man-es /tmp/man-es/usr/share/man/es

Traces are cut as `clean_docs` cuts them, but an "@" no longer drops a passage: decorators, matrix
products and `git@host` are what the at-sign rule must tell from an e-mail address. A README may
then name a real address, so each quarantined trace is printed with its rule and the line that trips
it, to be read: a real address is PII kept, not a false alarm.

`--set fresh` reads what neither half holds: the READMEs, NEWS and guides under /usr/share/doc in
English (not the FAQs and HTML `clean_manuals` reads, nor changelogs), and the Spanish message
catalogs of the installed programs (/usr/share/locale/es: their messages, usage texts and errors).
Its passages drop an "@" as `clean_docs` does: those files sign off with their maintainers'
addresses.
"""

from __future__ import annotations

import argparse
import email
import hashlib
import re
import sysconfig
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ragwatch_harness.bench.clean_docs import (
    AUTHOR_LINES,
    Document,
    as_trace,
    build_clean_traces,
    rendered_man_page,
)
from ragwatch_harness.bench.clean_manuals import read_text

HALVES = ("tune", "report")
SETS = (*HALVES, "fresh")
_DOC = Path("/usr/share/doc")
_DOC_TEXT = re.compile(
    r"(?i)(?:readme|news|usage|howto|guide|tutorial|intro|overview|todo|thanks)(?!.*(?:faq|changelog))"
)
"""Prose files of /usr/share/doc by name (FAQs are `clean_manuals`', changelogs are lists of people
and dates)."""
_SPANISH_CATALOGS = Path("/usr/share/locale/es/LC_MESSAGES")
_SECTIONS = ("man1", "man2", "man3", "man4", "man5", "man6", "man7", "man8")
_INSTALLED_SPANISH = Path("/usr/share/man/es")
"""What `clean_docs` reads: a page installed there is left out of this corpus."""
_PII_DISTRIBUTIONS = re.compile(r"faker|phonenumbers|stdnum|presidio|mimesis", re.IGNORECASE)
"""Packages whose README shows PII on purpose (fake names, example phones, valid ids)."""


def half_of(name: str) -> str:
    """The half a document falls in, by a hash of its name: stable across machines and runs."""
    return HALVES[hashlib.sha256(name.encode()).digest()[0] % 2]


def _man_pages(root: Path, sections: tuple[str, ...], language: str) -> Iterator[Document]:
    installed = {p.name for p in _INSTALLED_SPANISH.glob("man*/*")} if language == "es" else set()
    for section in sections:
        folder = root / section
        for path in sorted(folder.iterdir()) if folder.is_dir() else ():
            if path.is_file() and path.name not in installed:
                yield Document(
                    language,
                    "man",
                    f"man/{language}/{section}/{path.name}",
                    lambda p=path: rendered_man_page(p),
                )


def package_description(metadata: str) -> str:
    """The long description of a package's METADATA: its body, else its `Description` field."""
    message = email.message_from_string(metadata)
    body = message.get_payload()
    return body if isinstance(body, str) and body.strip() else (message.get("Description") or "")


def _package_readmes(site_packages: Path) -> Iterator[Document]:
    for path in sorted(site_packages.glob("*.dist-info/METADATA")):
        if not _PII_DISTRIBUTIONS.search(path.parent.name):
            yield Document(
                "en",
                "readme",
                path.parent.name,
                lambda path=path: package_description(
                    path.read_text(encoding="utf-8", errors="replace")
                ),
            )


def catalog_messages(path: Path) -> str:
    """The Spanish messages of a gettext catalog, one block each; its header (translators, dates)
    left out."""
    from babel.messages.mofile import read_mo

    try:
        with path.open("rb") as mo:
            catalog = read_mo(mo)
    except (OSError, ValueError, LookupError):
        return ""
    texts = (
        m.string if isinstance(m.string, str) else "\n".join(m.string) for m in catalog if m.id
    )
    return "\n\n".join(text for text in texts if text.strip())


def _fresh_documents() -> dict[str, list[Document]]:
    english = [
        Document("en", "doc", str(path), lambda path=path: read_text(path))
        for path in sorted(_DOC.rglob("*"))
        if path.is_file()
        and _DOC_TEXT.match(path.name)
        and path.suffix in ("", ".gz", ".txt", ".md", ".rst")
    ]
    spanish = [
        Document("es", "catalog", str(path), lambda path=path: catalog_messages(path))
        for path in sorted(_SPANISH_CATALOGS.glob("*.mo"))
    ]
    return {"en": english, "es": spanish}


def heldout_documents(which: str, man_es: Path, site_packages: Path) -> dict[str, list[Document]]:
    """The documents of one set: `man_es` is the extracted Spanish manual tree (its `man1` ...
    `man8`)."""
    if which == "fresh":
        return _fresh_documents()
    english = [d for d in _package_readmes(site_packages) if half_of(d.name) == which]
    if which == "tune":
        english += _man_pages(Path("/usr/share/man"), ("man2", "man3"), "en")
    spanish = [
        d for d in _man_pages(man_es, _SECTIONS, "es") if half_of(d.name.rsplit("/", 1)[1]) == which
    ]
    return {"en": english, "es": spanish}


def rate_line(label: str, k: int, n: int) -> str:
    """ "k of n quarantined" with its 95 % Clopper-Pearson (exact) and Wilson intervals, from
    scipy."""
    from scipy.stats import binomtest

    exact, wilson = (binomtest(k, n).proportion_ci(method=method) for method in ("exact", "wilson"))
    return (
        f"{label}: {k} of {n} quarantined ({k / n:.2%}; 95 % Clopper-Pearson {exact.low:.2%}-{exact.high:.2%}, "
        f"Wilson {wilson.low:.2%}-{wilson.high:.2%})"
    )


def tripping_line(text: str, rule: str) -> str:
    """The first line of `text` (or two lines, where a rule spans them) that trips `rule`: what to
    read."""
    from pipelines.privacy.residual import residual_pii_reasons

    lines = text.split("\n")
    for width in (1, 2, 3):
        for i in range(len(lines) - width + 1):
            window = "\n".join(lines[i : i + width])
            if rule in residual_pii_reasons(window):
                return window
    return text[:200]


def main() -> None:
    from pipelines.privacy.anonymizer import Anonymizer
    from pipelines.privacy.residual import residual_pii_reasons
    from ragwatch_harness.bench.anonymize import row_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--set", choices=SETS, required=True)
    parser.add_argument(
        "--man-es",
        type=Path,
        default=Path("/tmp/man-es/usr/share/man/es"),
        help="the extracted tree",
    )
    parser.add_argument(
        "--site-packages", type=Path, default=Path(sysconfig.get_paths()["purelib"])
    )
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    documents = heldout_documents(args.set, args.man_es, args.site_packages)
    personal = {"personal": AUTHOR_LINES} if args.set in HALVES else {}
    rows = build_clean_traces(args.traces, seed=args.seed, documents=documents, **personal)
    anonymizer = Anonymizer(b"ragwatch-bench-key")
    quarantined: Counter[str] = Counter()
    for i, row in enumerate(rows):
        anonymized, _ = anonymizer.anonymize_trace(as_trace(row, i))
        names = (
            "question",
            "answer",
            *(f"contexts[{k}]" for k in range(len(row["contexts"]))),
            "metadata",
        )
        found = False
        for name, text in zip(names, row_texts(anonymized)):
            for rule in residual_pii_reasons(text):
                print(f"QUARANTINED {row['document']} {name} {rule}: {tripping_line(text, rule)!r}")
                found = True
        quarantined[row["language"]] += found
    for language in ("en", "es"):
        print(
            rate_line(
                f"{args.set} {language}",
                quarantined[language],
                sum(r["language"] == language for r in rows),
            )
        )
    print(rate_line(args.set, sum(quarantined.values()), len(rows)))


if __name__ == "__main__":
    main()
