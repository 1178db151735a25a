"""Language detectors side by side on short texts this machine holds in each language
(language_texts.py).

Each detector runs in a fresh process (as a task would load it) and reports its import and load
time, the resident memory it adds over an interpreter that already holds numpy (every ragwatch task
does), and its cost per text over all the items (repeated to at least two seconds), in CPU time: on
a machine shared with other jobs the wall time measures the neighbours too. Every detector chooses
among the configured languages only:
- `ragwatch`: `pipelines.core.language.detect_language`, what the pipelines use: py3langid over all
  its languages, `und` below the two thresholds (MIN_IN_SET, MIN_CONFIDENCE);
- `py3langid`: py3langid restricted to the configured languages, its own choice and confidence;
- `lingua` / `lingua-low`: lingua-language-detector, high- and low-accuracy mode (measured where
  installed: it is not a ragwatch dependency; `pip install lingua-language-detector`);
- `previous`: the English/Spanish stopword count ragwatch used before.

Per language and source: n, the share detected right, `und`, and wrong. A text in a language outside
the set (Italian, Dutch, Japanese, Russian here) is right only as `und`. The sweep gives, per
threshold (and for ragwatch per share of probability in the set), the mean over the configured
languages of those shares and how often an outside language is forced into the set.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from pipelines.core.language import MIN_CONFIDENCE, MIN_IN_SET, UNDETERMINED
from ragwatch_harness.bench.language_texts import LanguageText, language_texts
from ragwatch_harness.bench.peak_memory import own_peak_rss_mb

DETECTORS = ("ragwatch", "py3langid", "lingua", "lingua-low", "previous")
THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
IN_SET_THRESHOLDS = (0.0, 0.05, 0.1, 0.2, 0.3)
MIN_TIMED_S = 2.0

Prediction = tuple[str, float, float]
"""(language, confidence among the configured languages, their probability over all languages; 1
when unknown)."""
Classify = Callable[[str], Prediction]


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


def _previous(text: str) -> Prediction:
    """The stopword count ragwatch used before (English or Spanish only)."""
    import re

    from pipelines.core.text import STOPWORDS_EN, STOPWORDS_ES, fold

    words = re.findall(r"[^\W\d_]+", fold(text))
    es = sum(w in STOPWORDS_ES - STOPWORDS_EN for w in words)
    en = sum(w in STOPWORDS_EN - STOPWORDS_ES for w in words)
    if es == en:
        return ("es" if re.search(r"[ñ¿¡áéíóú]", text, re.IGNORECASE) else "en"), 1.0, 1.0
    return ("es" if es > en else "en"), 1.0, 1.0


def _loaded(name: str, languages: Sequence[str]) -> Classify:
    if name == "ragwatch":
        from pipelines.core.language import guess_language

        def guess(text: str) -> Prediction:
            found = guess_language(text, languages)
            return found.language, found.confidence, found.in_set

        return guess
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        identifier.set_languages(list(languages))
        return lambda text: (*identifier.classify(text), 1.0)
    if name in ("lingua", "lingua-low"):
        from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_languages(
            *(
                Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))
                for code in languages
            )
        )
        if name == "lingua-low":
            builder = builder.with_low_accuracy_mode()
        detector = builder.with_preloaded_language_models().build()

        def classify(text: str) -> Prediction:
            values = detector.compute_language_confidence_values(text)
            if not values:
                return UNDETERMINED, 0.0, 1.0
            return values[0].language.iso_code_639_1.name.lower(), values[0].value, 1.0

        return classify
    if name == "previous":
        return _previous
    raise ValueError(f"unknown detector {name!r}: one of {', '.join(DETECTORS)}")


def measure_detector(
    name: str, languages: Sequence[str], texts: Sequence[str], min_timed_s: float = MIN_TIMED_S
) -> dict:
    """In this process: load the detector, classify every text (CPU time, over at least
    `min_timed_s`)."""
    import numpy  # noqa: F401  (every task has it: the detector's own memory is what comes on top)

    before = _rss_mb()
    started = time.process_time()
    try:
        classify = _loaded(name, languages)
        classify("warm up")
    except ImportError as exc:
        return {"failed": f"{exc.name or exc} is not installed"}
    load_s, loaded_mb = time.process_time() - started, _rss_mb() - before
    started, rounds = time.process_time(), 0
    while True:
        predictions = [classify(text) for text in texts]
        rounds += 1
        if time.process_time() - started >= min_timed_s:
            break
    per_text_s = (time.process_time() - started) / (rounds * len(texts))
    return {
        "load_s": round(load_s, 3),
        "loaded_mb": round(loaded_mb, 1),
        "added_mb": round(_rss_mb() - before, 1),
        "peak_rss_mb": round(own_peak_rss_mb(), 1),
        "per_text_us": round(per_text_s * 1e6, 2),
        "texts_per_s": round(1 / per_text_s),
        "predictions": [
            (label, round(float(c), 4), round(float(s), 4)) for label, c, s in predictions
        ],
    }


def shares(
    items: Sequence[LanguageText],
    predictions: Sequence[Prediction],
    threshold: float = 0.0,
    in_set: float = 0.0,
) -> dict[tuple[str, str], dict]:
    """Per (language, source) and (language, "all"): n and the shares right, `und` and wrong. A
    prediction below `threshold` confidence, or `in_set` probability in the configured languages,
    counts as `und`."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for item, (label, confidence, probability_in_set) in zip(items, predictions, strict=True):
        label = label if confidence >= threshold and probability_in_set >= in_set else UNDETERMINED
        for key in ((item.language, item.source), (item.language, "all")):
            row = counts[key]
            row[0] += 1
            row[1 if label == item.language else 2 if label == UNDETERMINED else 3] += 1
    return {
        key: {"n": n, "right": right / n, "und": und / n, "wrong": wrong / n}
        for key, (n, right, und, wrong) in counts.items()
    }


def outside_right(items: Sequence[LanguageText], languages: Sequence[str]) -> list[LanguageText]:
    """Items in a language outside the set are right only as `und`: relabelled so `shares` counts
    them so."""
    return [
        item
        if item.language in languages
        else LanguageText(UNDETERMINED, f"{item.language}:{item.source}", item.text)
        for item in items
    ]


def sweep(
    items: Sequence[LanguageText],
    predictions: Sequence[Prediction],
    languages: Sequence[str],
    in_set_thresholds: Sequence[float] = (0.0,),
) -> list:
    """Per threshold: mean over the configured languages of right, und and wrong; outside languages
    forced in."""
    rows = []
    for in_set, threshold in ((i, t) for i in in_set_thresholds for t in THRESHOLDS):
        by = shares(items, predictions, threshold, in_set)
        inside = [by[(language, "all")] for language in languages if (language, "all") in by]
        outside = by.get((UNDETERMINED, "all"))
        rows.append(
            {
                "in_set": in_set,
                "threshold": threshold,
                **{
                    k: sum(row[k] for row in inside) / len(inside) if inside else None
                    for k in ("right", "und", "wrong")
                },
                "outside_forced": None if outside is None else outside["wrong"],
            }
        )
    return rows


def run_language_bench(
    languages: Sequence[str],
    per_language: int = 300,
    detectors: Sequence[str] = DETECTORS,
    progress=print,
    texts: Sequence[LanguageText] | None = None,
    min_timed_s: float = MIN_TIMED_S,
) -> dict:
    """`texts` default to this machine's (language_texts.py)."""
    texts = language_texts(per_language) if texts is None else texts
    items = outside_right(texts, languages)
    out = {
        "languages": list(languages),
        "threshold": MIN_CONFIDENCE,
        "in_set": MIN_IN_SET,
        "n": dict(Counter(f"{t.language}:{t.source}" for t in texts)),
        "detectors": {},
    }
    context = multiprocessing.get_context("spawn")
    for name in detectors:
        progress(f"{name}: {len(texts):,} texts in a fresh process")
        with context.Pool(1) as pool:
            measured = pool.apply(
                measure_detector, (name, list(languages), [t.text for t in texts], min_timed_s)
            )
        if "failed" not in measured:
            predictions = measured.pop("predictions")
            chosen = (MIN_CONFIDENCE, MIN_IN_SET) if name == "ragwatch" else (0.0, 0.0)
            by = shares(items, predictions, *chosen)
            measured["shares"] = {f"{lang}:{source}": v for (lang, source), v in by.items()}
            if name != "previous":
                measured["sweep"] = sweep(
                    items,
                    predictions,
                    languages,
                    IN_SET_THRESHOLDS if name == "ragwatch" else (0.0,),
                )
        out["detectors"][name] = measured
    return out


def format_language_bench(result: dict) -> str:
    languages, detectors = result["languages"], result["detectors"]
    outside = sorted({key.split(":")[0] for key in result["n"]} - set(languages))
    head = (
        "| detector | " + " | ".join(languages) + " | outside → und (" + ", ".join(outside) + ") |"
    )
    lines = [
        "Right share per language (n), all sources; `und` and wrong in brackets:",
        "",
        head,
        "|" + "---|" * (len(languages) + 2),
    ]
    for name, measured in detectors.items():
        if "failed" in measured:
            lines.append(f"| {name} | failed: {measured['failed']} |")
            continue
        cells = []
        for key in [*(f"{lang}:all" for lang in languages), f"{UNDETERMINED}:all"]:
            s = measured["shares"].get(key)
            cells.append(
                "—"
                if s is None
                else f"{s['right']:.1%} ({s['und']:.0%} und, {s['wrong']:.0%} wrong)"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "n per language and source: "
        + ", ".join(f"{k} {v}" for k, v in sorted(result["n"].items())),
    ]
    lines += [
        "",
        "| detector | import + load (CPU) | memory added | CPU per text | texts/s | 1 M texts (CPU) |",
        "|---|---|---|---|---|---|",
    ]
    for name, measured in detectors.items():
        if "failed" not in measured:
            lines.append(
                f"| {name} | {measured['load_s']:.2f} s | {measured['added_mb']:.0f} MB | "
                f"{measured['per_text_us']:.0f} µs | {measured['texts_per_s']:,} | "
                f"{measured['per_text_us']:.0f} s |"
            )
    for name, measured in detectors.items():
        if "sweep" in measured:
            lines += [
                "",
                f"{name}: `und` below the thresholds (mean over {', '.join(languages)}; outside forced in):",
            ]
            lines += [
                "| in set ≥ | confidence ≥ | right | und | wrong | outside forced in |",
                "|---|---|---|---|---|---|",
            ]
            for row in measured["sweep"]:
                shares_ = " | ".join(
                    _pct(row[k]) for k in ("right", "und", "wrong", "outside_forced")
                )
                lines.append(f"| {row['in_set']:.2f} | {row['threshold']:.1f} | {shares_} |")
    lines.append(f"\nragwatch: in set ≥ {result['in_set']}, confidence ≥ {result['threshold']}.")
    return "\n".join(lines)


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"
