import gzip
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from scipy.stats import binomtest

from ragwatch_harness.bench.clean_heldout import (
    HALVES,
    catalog_messages,
    half_of,
    heldout_documents,
    package_description,
    rate_line,
    tripping_line,
)

PAGE = """.TH PRUEBA 1
.SH NOMBRE
prueba \\- una orden de ejemplo
.SH DESCRIPCI\\['O]N
Lee la entrada y la escribe sin cambios.
"""


def _man_tree(root: Path, names: list[str]) -> Path:
    folder = root / "man1"
    folder.mkdir(parents=True)
    for name in names:
        with gzip.open(folder / name, "wt", encoding="utf-8") as page:
            page.write(PAGE)
    return root


def _site_packages(root: Path, names: list[str]) -> Path:
    for name in names:
        info = root / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\n\n# {name}\n\nWhat it does.\n"
        )
    return root


def test_the_halves_split_every_document_once_by_its_name(tmp_path):
    pages = [f"orden{i}.1.gz" for i in range(40)]
    packages = [f"paquete{i}" for i in range(40)] + ["Faker"]
    man_es = _man_tree(tmp_path / "man", pages)
    site = _site_packages(tmp_path / "site", packages)
    halves = {half: heldout_documents(half, man_es, site) for half in HALVES}
    spanish = [{d.name.rsplit("/", 1)[1] for d in halves[half]["es"]} for half in HALVES]
    readmes = [{d.name for d in halves[half]["en"] if d.source == "readme"} for half in HALVES]
    assert spanish[0].isdisjoint(spanish[1]) and spanish[0] | spanish[1] == set(pages)
    assert (
        readmes[0].isdisjoint(readmes[1]) and len(readmes[0] | readmes[1]) == 40
    )  # Faker's README: fake PII
    assert all(spanish) and all(readmes)  # forty names fill both halves
    assert all(half_of(name) == HALVES[0] for name in spanish[0])
    assert {d.source for d in halves["report"]["en"]} == {
        "readme"
    }  # man pages in English only tune


def test_a_spanish_page_is_rendered_as_man_prints_it(tmp_path):
    man_es = _man_tree(tmp_path / "man", [f"orden{i}.1.gz" for i in range(8)])
    documents = [d for half in HALVES for d in heldout_documents(half, man_es, tmp_path)["es"]]
    assert "Lee la entrada y la escribe sin cambios." in documents[0].text()


def test_a_readme_is_the_body_of_the_metadata_else_its_description_field():
    assert package_description("Name: x\n\nThe body.\n").strip() == "The body."
    assert package_description("Name: x\nDescription: The field.\n") == "The field."


def test_rates_carry_scipy_s_exact_and_wilson_intervals():
    line = rate_line("report es", 2, 1000)
    exact, wilson = (binomtest(2, 1000).proportion_ci(method=m) for m in ("exact", "wilson"))
    assert line.startswith("report es: 2 of 1000 quarantined (0.20%")
    assert (
        f"Clopper-Pearson {exact.low:.2%}-{exact.high:.2%}" in line
        and f"Wilson {wilson.low:.2%}" in line
    )


def test_the_tripping_line_is_the_one_to_read():
    text = "def f():\n    return 1\nllámame al 612 345 678\nfin"
    assert tripping_line(text, "long_digit_run") == "llámame al 612 345 678"


def test_a_catalog_gives_its_messages_and_not_its_header(tmp_path):
    catalog = Catalog(locale="es", last_translator="Ana Pérez <ana@example.org>")
    catalog.add("No such file", "No existe el archivo «%s»")
    catalog.add(("%d file", "%d files"), ("%d archivo", "%d archivos"))
    with (tmp_path / "prog.mo").open("wb") as mo:
        write_mo(mo, catalog)
    text = catalog_messages(tmp_path / "prog.mo")
    assert "No existe el archivo «%s»" in text and "%d archivos" in text
    assert "Ana" not in text and "@" not in text
