"""A reference page generated from the code, added to the site's files; what the code lacks for it
is warned about."""

from __future__ import annotations

import logging


def add_page(files, config, page: str, content: str, problems: list[str], log: logging.Logger):
    from mkdocs.structure.files import File

    for problem in problems:
        log.warning(problem)
    files.append(File.generated(config, page, content=content))
    return files
