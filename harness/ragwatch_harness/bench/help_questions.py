"""Real questions with the passages that answer them, by subject: GNOME Help in Spanish, French,
Italian, Portuguese and German.

The golden-coverage check needs questions a project did not write, on documentation of another
domain and language than the Python docs of the demo, grouped by subject so that one
subject can be held back. GNOME Help (`gnome-user-docs` 43.0, CC BY-SA 3.0, fetched with
`apt-get download gnome-user-docs && dpkg-deb -x ...`) is a desktop's user manual in Mallard: each
topic page is titled the way a user asks ("¿Por qué se apaga mi equipo cuando cierro la tapa?",
"Conectar con una red inalámbrica") and answers it in its body, and
each names the guide it belongs to (power, color, printing, files, a11y, net-wireless…): its
subject, as the help's authors filed it. Each entry keeps the page's title as the question, its
body's first ANSWER_WORDS words as the passage (a RAG chunk's size) and its first guide as its
subject. Pages without a body of MIN_WORDS words are left out.

Unlike the Debian FAQ (faq_questions.py), it has Spanish, and its subjects are narrow enough for a
person to call each one topic. Its five languages are translations of one manual: a page's five
titles are not five independent pieces of evidence, and intervals over them are narrower than over
as many independent questions.

The test fixture `tests/data/gnome_help.json.gz` was built once with `python -m
ragwatch_harness.bench.help_questions /path/to/extracted/deb tests/data/gnome_help.json.gz`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

LANGUAGES = ("es", "fr", "it", "pt", "de")
ANSWER_WORDS = 120
MIN_WORDS = 15
MALLARD = "{http://projectmallard.org/1.0/}"


def page_entry(path: Path, language: str) -> dict | None:
    """One Mallard topic page -> its entry; None for a guide page (a list of links) or one without a
    body."""
    root = ElementTree.parse(path).getroot()
    info, title = root.find(f"{MALLARD}info"), root.find(f"{MALLARD}title")
    if root.get("type") == "guide" or info is None or title is None:
        return None
    guides = [
        link.get("xref", "").split("#")[0]
        for link in info.findall(f"{MALLARD}link")
        if link.get("type") == "guide"
    ]
    body = " ".join(
        "".join(element.itertext()) for element in root if element.tag not in (info.tag, title.tag)
    ).split()
    if not guides or not guides[0] or len(body) < MIN_WORDS:
        return None
    return {
        "language": language,
        "subject": guides[0],
        "page": path.stem,
        "question": " ".join("".join(title.itertext()).split()),
        "answer": " ".join(body[:ANSWER_WORDS]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "root", type=Path, help="folder holding usr/share/help/<lang>/gnome-help/*.page"
    )
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    entries = []
    for language in LANGUAGES:
        for path in sorted((args.root / f"usr/share/help/{language}/gnome-help").glob("*.page")):
            entry = page_entry(path, language)
            if entry is not None:
                entries.append(entry)
    with gzip.open(args.out, "wt", encoding="utf-8") as fh:
        json.dump(entries, fh, ensure_ascii=False, indent=0)
    print(f"{len(entries)} questions -> {args.out}")


if __name__ == "__main__":
    main()
