"""Tests mirror the code: each module has tests/unit/<its path>/test_<module>[_<aspect>].py, or is
of a kind that needs none, decided by the rule below (no hand-kept list of modules).

Placing a new test: beside the module it mainly tests (tests/unit/pipelines/privacy/test_residual.py
for pipelines/privacy/residual.py; a feature-named file is test_<module>_<aspect>.py), in
tests/integration/ if it needs services, the stack, the browser or the real model, and shared
helpers in tests/support/.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
CODE_ROOTS = ("pipelines", "harness", "deploy", "plugins", "dags")
IMPORT_ROOTS = ("plugins", "harness")
"""Folders whose modules import without the folder's name: Airflow puts plugins/ on its path, and
harness/ is the harness's own distribution (`ragwatch_harness`)."""
HOUSE = {
    "unit/test_architecture.py",
    "unit/test_docs.py",
    "unit/test_layout.py",
    "unit/test_monitoring.py",
}
"""Whole-house checks: they test no one module."""


def modules() -> list[str]:
    return sorted(
        str(p.relative_to(ROOT))
        for r in CODE_ROOTS
        for p in (ROOT / r).rglob("*.py")
        if p.name != "__init__.py"
    )


def mirrored_tests(module: str) -> list[Path]:
    path = Path(module)
    folder = TESTS / "unit" / path.parent
    return [
        t
        for t in folder.glob(f"test_{path.stem}*.py")
        if t.stem == f"test_{path.stem}" or t.stem.startswith(f"test_{path.stem}_")
    ]


def dotted(module: str) -> str:
    """The name a module is imported by: without the folder for those of IMPORT_ROOTS."""
    parts = list(Path(module).with_suffix("").parts)
    parts = parts[1:] if parts[0] in IMPORT_ROOTS else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def imported(file: Path) -> set[str]:
    """Every module name `file` imports (relative imports resolved), `from a import b` counted as a
    and a.b."""
    package = dotted(str(file.relative_to(ROOT))).split(".")
    package = package if file.name == "__init__.py" else package[:-1]
    names = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(
                [*package[: len(package) - node.level + 1], *([node.module] if node.module else [])]
            )
            base = base if node.level else node.module
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


@cache
def by_name() -> dict[str, str]:
    return {
        dotted(str(p.relative_to(ROOT))): str(p.relative_to(ROOT))
        for r in CODE_ROOTS
        for p in (ROOT / r).rglob("*.py")
    }


@cache
def named_by_tests() -> set[str]:
    """Modules a test file or a test helper imports, runs (`python -m name`) or loads by path (a DAG
    folder, a plugin file, a hostname callable in the stack's configuration)."""
    files = [
        t
        for t in TESTS.rglob("*.py")
        if "data" not in t.relative_to(TESTS).parts and t != Path(__file__)
    ]
    text = "\n".join(t.read_text() for t in files)
    named = {by_name()[n] for t in files for n in imported(t) if n in by_name()}
    return named | {m for m in modules() if dotted(m) in text or m in text}


@cache
def reached_through() -> dict[str, str]:
    """Each module the tested modules reach, with the tested module it is reached from: a module
    with its own test file or named by a test, then whatever those import or name (a callable in a
    configuration), and so on."""
    start = sorted(m for m in by_name().values() if mirrored_tests(m) or m in named_by_tests())
    reached, frontier = dict.fromkeys(start, ""), start
    while frontier:
        found = {}
        for source in frontier:
            text, names = (ROOT / source).read_text(), imported(ROOT / source)
            for name, module in by_name().items():
                if (
                    module not in reached
                    and module not in found
                    and (name in names or name in text)
                ):
                    found[module] = reached[source] or source
        reached.update(found)
        frontier = sorted(found)
    return reached


def exercised_through(module: str) -> str | None:
    """Why a module without its own test file needs none, or None when it does:
    - an entry point: `__main__.py`, or a DAG file (every file in dags/ is parsed and run by
      test_dags.py);
    - named by a test: imported, run or loaded by a test file or helper;
    - a part of a tested module: imported or named (a callable in a configuration) by a module that
      has its own test file or that a test names, directly or through other such parts."""
    if Path(module).name == "__main__.py" or module.startswith("dags/"):
        return "an entry point"
    if module in named_by_tests():
        return "named by a test"
    return f"a part of {reached_through()[module]}" if module in reached_through() else None


def test_every_module_has_its_test_or_is_exercised_through_another():
    missing = [m for m in modules() if not mirrored_tests(m) and exercised_through(m) is None]
    assert not missing, (
        "modules with no tests/unit/<path>/test_<module>.py that no test imports, runs or loads, and that no tested "
        f"module imports: {missing}"
    )


def test_the_rule_rejects_a_module_nothing_reaches():
    # The rule must be able to fail: a module no test and no tested module names.
    assert exercised_through("pipelines/nothing_imports_this.py") is None
    assert exercised_through("pipelines/cli/__main__.py") == "an entry point"
    assert exercised_through("pipelines/privacy/emails.py").startswith("a part of ")


def test_every_test_file_sits_at_a_mirrored_path():
    misplaced = []
    for test in sorted(TESTS.rglob("test_*.py")):
        rel = test.relative_to(TESTS)
        if rel.parts[0] == "data" or rel.parts[0] in {"integration"} or rel.as_posix() in HOUSE:
            continue
        if rel.parts[0] == "support":
            misplaced.append(f"{rel} (tests/support/ holds helpers, not tests)")
            continue
        code = ROOT.joinpath(*rel.parts[1:-1])
        words = test.stem.removeprefix("test_").split("_")
        stems = ["_".join(words[:n]) for n in range(len(words), 0, -1)]
        if rel.parts[0] != "unit" or not any((code / f"{stem}.py").is_file() for stem in stems):
            misplaced.append(str(rel))
    assert not misplaced, (
        f"test files neither at tests/unit/<module path>/test_<module>[_<aspect>].py nor in integration/: {misplaced}"
    )


def test_every_test_folder_is_a_package():
    # Without __init__.py two test files of the same name in two folders clash at import.
    folders = {
        f
        for p in TESTS.rglob("*.py")
        if "data" not in p.relative_to(TESTS).parts
        for f in p.parents
        if f == TESTS or TESTS in f.parents
    }
    assert not [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()]
