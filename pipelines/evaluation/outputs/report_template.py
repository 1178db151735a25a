"""The HTML of one eval run's report, a Jinja template (rendered by report.py with autoescape on).

Inline CSS only, no script and no URL: the ragwatch page serves reports under a sandboxing CSP, and
a report opens from a file, a DVC checkout or an e-mail attachment alike. The verdict and its chart
come first; the method of each section folds into `<details>`.
"""

REPORT_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragwatch · {{ run.suite }} · {{ run.logical_date }} · {{ run.target }}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2933; margin: 0 auto;
       max-width: 1180px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #e4e7eb; }
table { border-collapse: collapse; margin: 6px 0 12px; } th, td { padding: 4px 8px; border-bottom: 1px solid #e4e7eb;
       text-align: left; vertical-align: top; }
th { background: #f5f7fa; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta td:first-child { color: #7b8794; } .muted { color: #7b8794; }
.problem { background: #fde8e8; } .watch { background: #fff4d6; } .healthy { background: #e6f6ec; }
.inconclusive { background: #f5f7fa; color: #52606d; }
.pass { color: #137a3b; font-weight: 600; } .fail { color: #b42318; font-weight: 600; }
.banner { background: #fff4d6; border: 1px solid #f0c36d; padding: 8px 12px; margin: 12px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; } svg.chart { font-size: 11px; background: #fff; }
details { margin: 2px 0; } pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; font: inherit; }
.item { border: 1px solid #e4e7eb; padding: 8px 12px; margin: 10px 0; }
.verdict .lead { font-size: 16px; margin: 10px 0 6px; } details.method { margin: 12px 0; }
details.method > summary { cursor: pointer; color: #52606d; }
</style>
</head>
<body>
<h1>ragwatch eval: {{ run.suite }} · {{ run.logical_date }} · {{ run.target }}</h1>
<section class="verdict">
{% if not comparisons %}
<p class="lead">{% if run.suite == "online" %}Not gated: online runs are monitored by alerts.{% else
%}Not gated: no earlier run of {{ run.target }} to compare against; the gate starts with the next run.{%
endif %}</p>
{% elif run_gate.passed %}
<p class="lead"><span class="pass">PASSED</span>: no gated metric of {{ run.target }} fell beyond its tolerance
against {% for comparison, _ in comparisons %}{{ comparison.role }} {{ comparison.against.run_id }}{% if not loop.last
%} and {% endif %}{% endfor %}.</p>
{% else %}
<p class="lead">{% if run_gate.passed is false %}<span class="fail">FAILED</span>{% else %}Not gated{% endif %}: {% if
failed_rows %}{{ failed_rows|length }} check(s) failed.{% else %}no gated metric was scored in both runs.{% endif %}</p>
{% if failed_rows %}<ul>{% for role, m in failed_rows %}
<li><strong>{{ m.metric }}</strong> against the {{ role }}: {{ m.baseline_mean|num }} → {{ m.candidate_mean|num }}
(difference {{ m.diff|num(4) }}, 95 % CI {{ ci(m.ci_low, m.ci_high) }}, p {{ m.p_adjusted|num(4) }}): {{ m.reason }}</li>
{% endfor %}</ul>{% endif %}
{% endif %}
{% if problems %}<p>Problems the diagnosis establishes: {% for f in problems[:3] %}{{ f.metric }} on {{ f.stratum }} ({{
f.mean|num }}: {{ f.users_see }}){% if not loop.last %}; {% endif %}{% endfor %}{% if problems|length > 3 %}; and {{
problems|length - 3 }} more below{% endif %}.</p>{% endif %}
{{ verdict_chart }}
</section>
<details class="method"><summary>Method: the run, its models and parameters</summary>
<table class="meta">
<tr><td>run id</td><td>{{ run.run_id }}</td></tr>
<tr><td>status</td><td>{{ run.status }}</td></tr>
<tr><td>dataset version</td><td>{{ run.dataset_version }}</td></tr>
<tr><td>target (system under test)</td><td>{{ run.target }}</td></tr>
<tr><td>generator model</td><td>{{ run.generator_model or "–" }}</td></tr>
<tr><td>judge model</td><td>{{ run.judge_model or "–" }}</td></tr>
<tr><td>finished</td><td>{{ run.finished_at or "–" }}</td></tr>
<tr><td>params</td><td><code>{{ params }}</code></td></tr>
</table>
<p class="muted">Each section below says how its figures are computed; the longer explanations fold open like
this one.</p>
</details>
{% if selection %}
<h2>Judged traces</h2>
<p>The day's sample held {{ selection.day_traces }} traces; {{ selection.judged }} were judged (budget {{
selection.max_traces }}: at least {{ selection.min_per_stratum }} per app/language stratum where it has them, the rest
in proportion, the same traces on a rerun and a superset with a larger budget), and {{ selection.noise }} of them also
got noise sensitivity (a share of {{ selection.noise_share }} per stratum, at least one).{% if
selection.target_half_width %} Each stratum asked for the traces its faithfulness interval needs to be about ±{{
selection.target_half_width }} wide, from the spread of the last runs (column "asked"); the budget caps the
total.{% endif %}</p>
<table>
<tr><th>stratum</th><th>day's traces</th>{% if selection.target_half_width %}<th>asked</th>{% endif %}<th>judged</th>
<th>noise ΔF</th><th>faithfulness n</th><th>faithfulness 95 % CI ±</th></tr>
{% for row in judged_strata %}
<tr><td>{{ row.stratum }}</td><td class="num">{{ row.day_traces }}</td>{% if selection.target_half_width %}<td
class="num">{{ row.wanted }}</td>{% endif %}<td class="num">{{ row.judged }}</td>
<td class="num">{{ row.noise }}</td><td class="num">{{ row.faithfulness_n }}</td>
<td class="num">{{ row.faithfulness_half_width|num }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% if coverage %}
<h2>Does the golden set cover what users ask?</h2>
{% if coverage.status == "ok" %}
{% set t = coverage.threshold %}
<details class="method"><summary>How coverage is measured</summary>
<p>The day's questions (at most {{ coverage.max_questions }} traces, stratified by app/language like the judged
traces; repeats folded into distinct questions) were each matched to the nearest reference passage of golden set
<code>{{ coverage.golden }}</code> {{ coverage.golden_version }} ({{ coverage.golden_questions }} items, {{
coverage.golden_passages }} passages) in their own language: a question is covered when the golden set holds a passage
that answers it, at {{ t.signal }} ≥ {{ t.value|num }}.
{% if t.method == "calibrated" %}That threshold was calibrated on the golden set's {{ t.positives }} user questions
(items from production traces or imported by people; never its generated questions) with Youden's J: {{ (100 *
t.tpr)|round|int }} % of them are that close to a golden passage (true matches), {{ (100 * t.fpr)|round|int }} % of
their nearest passages of another document are too (false matches; {{ t.negatives }} negatives); ROC AUC {{ t.auc|num
}}.{% else %}That threshold is the user's setting (RAGWATCH_COVERAGE_THRESHOLD), not calibrated{% if t.auc is not none
%}; on the golden set's {{ t.positives }} user questions it matches {{ (100 * t.tpr)|round|int }} % of true passages
and {{ (100 * t.fpr)|round|int }} % of other documents' (ROC AUC {{ t.auc|num }}){% endif %}.{% endif %} Matching
errs both ways, so the share of the traffic matched is about TPR × coverage + FPR × the rest: <strong>coverage</strong>
is that share corrected for the two rates, (matched − FPR) / (TPR − FPR) (Rogan–Gladen), the share of the traffic
whose question the golden set covers. Its "day" interval is the matched share's Jeffreys 95 % interval, n the
distinct questions, through the same correction: days measured against one golden set are compared by it. Its
"level" interval adds the rates' own uncertainty (delta method): how well the level itself is known. "all" weights
each stratum by its share of the day's sample, at the effective sample size (Korn–Graubard).</p>
</details>
{% if coverage.level_note %}<p><strong>Coverage not estimated</strong>: {{ coverage.level_note }}. The matched share
is shown as it is: it counts the matcher's errors too.</p>{% endif %}
<table>
<tr><th>stratum</th><th>day's traces</th><th>traces matched</th><th>distinct questions</th><th>matched as covered</th><th>matched share</th><th>coverage</th><th>day 95 % CI</th><th>level 95 % CI</th></tr>
{% for row in coverage.strata %}
<tr><td>{{ row.stratum }}</td><td class="num">{{ row.day_traces }}</td><td class="num">{{ row.traces }}</td>
<td class="num">{{ row.questions }}</td><td class="num">{{ row.covered }}</td><td class="num">{{ row.matched|num }}</td>
<td class="num">{{ row.ratio|num }}</td>
<td class="num">{% if row.ci_low is not none %}[{{ row.ci_low|num }}, {{ row.ci_high|num }}]{% else %}–{% endif %}</td>
<td class="num">{% if row.level_ci_low is not none %}[{{ row.level_ci_low|num }}, {{ row.level_ci_high|num }}]{% else %}–{% endif %}</td></tr>
{% endfor %}
</table>
{{ coverage_chart }}
<h3>Largest topics the golden set misses</h3>
{% if coverage.clusters or coverage.matcher_misses %}
<p>The distinct uncovered questions grouped by topic (average-linkage clustering{% if coverage.topic_cut %}, cut at
similarity {{ coverage.topic_cut.similarity|num }}{% endif %}{% if coverage.topic_cut is none %}{% elif
coverage.topic_cut.method == "calibrated" %}: the cut whose clusters of the
golden set's {{ coverage.topic_cut.calibrated_on }} best match their {{ coverage.topic_cut.documents }} documents,
adjusted Rand index {{ coverage.topic_cut.adjusted_rand|num }}{% else %}: a default, {{ coverage.topic_cut.note
}}{% endif %}; groups of at least {{ coverage.min_cluster_size }} distinct questions; {{
coverage.unclustered }} uncovered questions belong to no topic). A covered subject leaves unmatched questions too
(the matcher's misses), so each topic is weighed with the day's matched questions that lie in it: "matched" counts
them, and its coverage is its matched share corrected for the matcher's error rates in its language. A topic is
listed when it has fewer matched questions than a covered topic has (beta-binomial at its language's true-match rate,
Benjamini–Hochberg at 5 % over the day's topics); "missed" is its traffic the golden set does not cover, (1 −
coverage) × its traffic, as a share of the day's traffic, and the topics are ranked by it. "Uncovered" is the traffic
of its unmatched questions. The
largest are in <code>inbox/uncovered-{{ run.logical_date }}.csv</code> for review, and the next golden build's trace
questions start from them.{% if coverage.clusters|length > report_topics %} The {{ report_topics }} largest of {{
coverage.clusters|length }} topics are shown.{% endif %}</p>
{% if coverage.clusters %}
<table>
<tr><th>topic</th><th>language</th><th>unmatched questions</th><th>matched questions</th><th>coverage</th><th>missed</th><th>uncovered</th><th>representative questions</th></tr>
{% for c in coverage.clusters[:report_topics] %}
<tr><td><code>{{ c.cluster_id }}</code></td><td>{{ c.language }}</td><td class="num">{{ c.questions }}</td>
<td class="num">{{ c.matched_questions }}</td><td class="num">{{ c.coverage|num }}</td>
<td class="num">{{ (100 * c.gap_share)|round(1) }} %</td>
<td class="num">{{ (100 * c.share)|round(1) }} %</td><td>{% for r in c.representatives %}{{ r.question }}{% if not
loop.last %}<br>{% endif %}{% endfor %}</td></tr>
{% endfor %}
</table>
{% else %}
<p>No topic the golden set misses: every topic's questions are matched about as often as a covered topic's.</p>
{% endif %}
{% if coverage.matcher_misses %}
<p>Likely the matcher's misses, not queued ({{ coverage.matcher_misses|length }} topic{% if
coverage.matcher_misses|length != 1 %}s{% endif %} matched about as often as a covered one){% for c in
coverage.matcher_misses[:3] %}{% if loop.first %}: {% else %}; {% endif %}{{ c.language }}, {{ c.questions }} unmatched
and {{ c.matched_questions }} matched questions, coverage {{ c.coverage|num }} (“{{ c.representatives[0].question
}}”){% endfor %}.</p>
{% endif %}
{% else %}
<p>No topic: the {{ coverage.unclustered }} uncovered questions are one-offs.</p>
{% endif %}
{% else %}
<p><strong>Not measured</strong> (failed): {{ coverage.reason }}</p>
{% endif %}
{% endif %}
{% if offline %}
<div class="banner">Scored with the offline deterministic backend ({{ run.judge_model }}): these numbers test the
pipeline, not the assistant.</div>
{% endif %}

<h2>Regression gate</h2>
{% if not comparisons %}
<p class="muted">No gate ran: no earlier successful run of this suite and target on this golden set to compare
against.</p>
{% else %}
{% if run_gate.reference_note %}<p>{% if run_gate.passed %}<span class="pass">PASSED</span>{% elif run_gate.passed is
false %}<span class="fail">FAILED</span>{% else %}Not gated{% endif %}: the run passes only when it passes against its
baseline (the previous run, so sudden regressions fail) and against its reference (so slow drift fails too);
{{ run_gate.reference_note }}; {{ run_gate.level }}.</p>{% endif %}
{% for comparison, baseline_report in comparisons %}
{% set gate, baseline = comparison.gate, comparison.against %}
<h3>Against the {{ comparison.role }} {{ baseline.run_id }}</h3>
<p class="muted">{{ comparison.chosen }}{% if comparison.scope %}; {{ comparison.scope }}{% endif %}.</p>
{% if gate is none %}
<p>{% if comparison.not_comparable %}<span class="fail">FAILED</span>, not comparable: {{ comparison.not_comparable
}}{% else %}Not gated: no gated metric was scored in both runs{% endif %}.</p>
{% else %}
<p>{% if gate.passed %}<span class="pass">PASSED</span>{% else %}<span class="fail">FAILED</span>{% endif %}
{% if baseline %} against run {{ baseline.run_id }}{% if baseline_report %} (<a href="{{ baseline_report }}">its
report</a>){% endif %}{% endif %}.
{{ gate.rule }}</p>
<details class="method"><summary>How the gate decides</summary>
<p class="muted">Correction: {{ gate.correction }} over the {{ gate.family_size }} check(s) of this gate that could
move ({{ gate.draws }} null draws; family-wise: one false alarm fails the gate). A metric not gated passes unless its
share of failed, skipped or missing items rose or, where the baseline measured it, its worst case worsened. Each
row's interval and test are named below the table.</p>
</details>
<table>
<tr><th>metric</th><th>status</th><th>n</th><th>baseline</th><th>candidate</th><th>difference</th>
<th>{{ (100 * gate.confidence)|round|int }} % CI</th><th>p (adjusted)</th><th>tolerance</th>
<th>catches (90 %)</th><th>worst case</th><th>not ok</th><th>verdict</th></tr>
{% for m in gate.metrics %}
<tr class="{{ 'problem' if not m.passed else ('healthy' if m.gated else 'inconclusive') }}"><td>{{ m.metric }}{% if
not m.higher_is_better %} (lower is better){% endif %}</td><td>{{ m.design if m.gated else m.status }}</td>
<td class="num">{{ m.n_pairs if m.design == "paired" else m.n_candidate ~ " / " ~ m.n_baseline }}</td>
<td class="num">{{ m.baseline_mean|num }}</td><td class="num">{{ m.candidate_mean|num }}</td>
<td class="num">{{ m.diff|num(4) }}</td><td class="num" title="{{ m.ci_method or '' }}">{{ ci(m.ci_low, m.ci_high) }}</td>
<td class="num">{{ m.p_adjusted|num(4) }}</td><td class="num">{{ m.tolerance|num(4) }}</td>
<td class="num" title="the smallest drop of the mean this gate fails 90 % of the time at this n: what a pass can hide">{%
if m.detectable_drop is not none %}≥ {{ m.detectable_drop|num(2) }}{% else %}–{% endif %}</td>
<td class="num" title="failed, skipped or missing items at the worst end of the range">{{ m.worst_case_diff|num(4) }}{%
if m.worst_case_p_adjusted is not none %} (p {{ m.worst_case_p_adjusted|num(3) }}){% endif %}</td>
<td class="num" title="failed, skipped or missing share: baseline → candidate">{{ m.baseline_not_ok_share|num(2) }} →
{{ m.candidate_not_ok_share|num(2) }}</td><td>{{ m.reason }}</td></tr>
{% endfor %}
</table>
<p class="muted">{% for name, text in gate_ci_methods.items() %}Interval <code>{{ name }}</code>: {{ text }}. {% endfor %}
{% for name, text in test_methods.items() %}Test <code>{{ name }}</code>: {{ text }}. {% endfor %}</p>
{% endif %}
{% endfor %}
{% endif %}

<h2>Diagnosis</h2>
<details class="method"><summary>How the diagnosis states a band</summary>
<p class="muted">Retrieval first: low context precision degrades faithfulness downstream, so retrieval findings
come before generation findings of the same severity. A band is stated only with evidence: at least {{ min_n }} ok
scores and an interval that clears the band's edge {% if corrected %}after {{ bh }} over every band claim of this
run{% else %}on its own (correction: none, so each claim is false at most 2.5 % of the time but the report's share
of false claims is not bounded){% endif %}; otherwise the finding is <span class="inconclusive">inconclusive</span> ({{ not_enough_evidence }}).
A claim steps down to the strongest band its interval supports: "&lt; 0.85" (not healthy) when the estimate lies
below 0.75 but the interval does not establish it. The context-precision band is read on
context_precision_share (chunks given that the judge found useful / chunks given); the id-based precision@k and
ragas' rank-weighted context_precision_ranked have no band.</p>
</details>
{% if findings %}
<table>
<tr><th>severity</th><th>metric</th><th>stratum</th><th>mean</th><th>95 % CI</th><th>n</th><th>band</th>
<th>what users see</th><th>first action</th><th>note</th></tr>
{% for f in findings %}
<tr class="{{ f.severity }}"><td>{% if f.severity == "inconclusive" %}<em>inconclusive</em>{% if f.band_severity %}
<br><span class="muted">(mean in the {{ f.band_severity }} band)</span>{% endif %}{% else %}{{ f.severity }}{% endif %}</td>
<td>{{ f.metric }}</td><td>{{ f.stratum }}</td><td class="num">{{ f.mean|num }}</td>
<td class="num" title="{{ f.ci_method or '' }}">{{ ci(f.ci_low, f.ci_high) }}</td><td class="num">{{ f.n }}</td>
<td>{{ f.band }}</td><td>{{ f.users_see }}</td><td>{{ f.first_action }}</td><td>{{ f.note }}</td></tr>
{% endfor %}
</table>
{% else %}
<p class="muted">No metric with an operating threshold was scored.</p>
{% endif %}

{% if judge_audit %}
<h2>Can the judge be trusted?</h2>
<p class="muted">People label a small daily sample of judged items yes/no ({{ judge_audit.queued }} queued by this run{% if
judge_audit.queue %} in <code>{{ judge_audit.queue }}</code>{% endif %}; <code>ragwatch judge labels import FILE</code> takes
them back). Agreement is over every label of this suite so far, each label weighted to its own run's verdict mix. κ below 0.6
or fewer than 20 labels: the judge is not trustworthy for that metric and its scores should not be read alone. The
corrected mean divides out the judge's error rates, measured on the labelled items of earlier runs (Rogan–Gladen:
(judge mean + specificity − 1) / (sensitivity + specificity − 1)); it holds when quality moves as long as the judge errs
at the same rates, which is tested between earlier and later labelled runs: when they differ, or cannot be compared
yet, no corrected mean is given and the last column says why. The judge-only interval takes the verdicts as truth.</p>
<table>
<tr><th>metric (0/1 form)</th><th>labels</th><th>κ</th><th>accuracy</th><th>judge yes / human no</th><th>judge no / human yes</th>
<th>judge-only mean, 95 % CI</th><th>corrected mean, 95 % CI</th><th>more labels for ±half-width</th><th>verdict</th></tr>
{% for row, c in judge_trust %}
<tr class="{{ 'healthy' if row.trusted else 'problem' if row.trusted is false else '' }}"><td>{{ row.metric }}<br>
<span class="muted">{{ row.meaning }}</span></td><td class="num">{{ row.labels }}</td><td class="num">{{ row.kappa|num }}</td>
<td class="num">{{ row.accuracy|num }}</td>
<td class="num">{{ c.agreement.confusion.judge_yes_human_no if c.agreement else "–" }}</td>
<td class="num">{{ c.agreement.confusion.judge_no_human_yes if c.agreement else "–" }}</td>
<td class="num">{{ row.judge_mean|num }} {{ ci(*row.judge_ci) if row.judge_ci else "" }}</td>
<td class="num">{{ row.corrected_mean|num }} {{ ci(*row.corrected_ci) if row.corrected_ci else "" }}{% if row.corrected_method
%}<br><span class="muted">{{ row.corrected_method }}</span>{% endif %}{% if row.sensitivity
is not none %}<br><span class="muted">sensitivity {{ row.sensitivity|num }}, specificity {{ row.specificity|num }}</span>{% endif %}</td>
<td class="num">{% if row.more_labels is not none %}{{ row.more_labels }} (±{{ row.half_width }}){% endif %}
{{ row.notes|join("; ") if row.notes or row.more_labels is not none else "–" }}</td>
<td>{% if row.trusted %}trustworthy{% else %}<strong>{{ row.verdict }}</strong>{% endif %}</td></tr>
{% endfor %}
</table>
{% endif %}

<h2>Retrieval vs generation failures</h2>
{% if attribution %}
<table>
<tr><th>stratum</th>{% for label in attribution.labels %}<th>{{ label }}</th>{% endfor %}<th>verdict</th></tr>
{% for stratum, summary in attribution.rows %}
<tr><td>{{ stratum }}</td>{% for label in attribution.labels %}<td class="num">{{ summary.counts[label] }}</td>
{% endfor %}<td>{{ summary.verdict }}</td></tr>
{% endfor %}
</table>
{% else %}
<p class="muted">No per-item attribution in this run (it needs gold chunk ids).</p>
{% endif %}

<h2>Scores per stratum</h2>
<p class="muted">Means are over ok scores only; failed and skipped items are counted, never averaged as 0. Each
95 % interval names its method; no multiplicity correction applies to a single interval.</p>
<table>
<tr><th>metric</th><th>stratum</th><th>n ok</th><th>failed</th><th>skipped</th><th>mean</th><th>95 % CI</th>
<th>interval</th><th>std</th></tr>
{% for rows in table %}
{% set outer = loop %}
{% for a in rows %}
<tr>{% if loop.first %}<td rowspan="{{ rows|length }}" title="{{ metrics[outer.index0][1] }}">{{ a.metric }}
{% if metrics[outer.index0][2] %}<br><span class="muted">lower is better</span>{% endif %}
<br><span class="muted">{{ metrics[outer.index0][1] }}</span></td>{% endif %}
<td>{{ a.stratum }}</td><td class="num">{{ a.n }}</td><td class="num">{{ a.n_failed }}</td>
<td class="num">{{ a.n_skipped }}</td><td class="num">{{ a.mean|num }}</td>
<td class="num">{{ ci(a.ci_low, a.ci_high) }}</td><td>{{ a.ci_method or "–" }}</td><td class="num">{{ a.std|num }}</td></tr>
{% endfor %}
{% endfor %}
</table>
<p class="muted">{% for name, text in ci_methods.items() %}<code>{{ name }}</code>: {{ text }}. {% endfor %}</p>

{% if judge_noise %}
<h2>Judge noise (test-retest)</h2>
<p class="muted">{{ judge_noise.retested_items }} items{% if retest_share is not none %} (a share of {{ retest_share }}
of the judged items, chosen by a hash of run and item){% endif %} were judged a second time by requests that bypass the
LLM cache, with a distinct seed where the judge samples; the second judgement never replaces the first. n: items with
both judgements ok (fewer than {{ min_retests }}: no figure). ICC: intraclass correlation ICC(1,1) of the two
judgements. κ and agreement: of the two judgements' 0/1 verdicts, for metrics with a 0/1 form. σ²<sub>judge</sub>:
half the mean squared difference of the two judgements. Share: σ²<sub>judge</sub> / the per-item variance of the
metric over its N ok items — the judge's share of the variance of the mean (σ²/N). ±: the item-sampling 95 % interval
of the mean above (all items, its method named), and what it would be averaging 2 judgements per item, with a
noiseless judge, or with twice the items (scaled by the standard error; see statistics/judge_noise.py). Temperature-0
prompts may well agree perfectly: that is a finding, not a flaw.{% if judge_noise.note %} Note: {{ judge_noise.note
}}.{% endif %}</p>
<table>
<tr><th>metric</th><th>n</th><th>ICC</th><th>mean |x₁ − x₂|</th><th>0/1 κ · agreement</th>
<th>σ²<sub>judge</sub></th><th>σ²<sub>items</sub> (N)</th><th>judge share</th><th>95 % CI ±</th>
<th>2 judgements ±</th><th>noiseless judge ±</th><th>2× items ±</th><th>reading</th></tr>
{% for row in judge_noise_rows %}
{% if row.enough %}
<tr><td>{{ row.metric }}</td><td class="num">{{ row.n_retested }}</td><td class="num">{{ row.icc|num }}</td>
<td class="num">{{ row.mean_abs_difference|num }}</td><td class="num">{% if row.verdict_agreement is not none %}{{
row.kappa|num }} · {{ row.verdict_agreement|num }}{% else %}–{% endif %}</td>
<td class="num">{{ row.judge_variance|num(4) }}</td>
<td class="num">{{ row.total_variance|num(4) }} ({{ row.n_items }})</td>
<td class="num">{{ row.noise_share|num(2) }}</td>
<td class="num" title="{{ row.ci_method or '' }}">{{ row.half_width|num }}</td>
<td class="num">{{ row.half_width_two_judgements|num }}</td>
<td class="num">{{ row.half_width_noiseless_judge|num }}</td>
<td class="num">{{ row.half_width_double_items|num }}</td><td>{{ row.verdict }}</td></tr>
{% else %}
<tr class="inconclusive"><td>{{ row.metric }}</td><td class="num">{{ row.n_retested }}</td><td colspan="11">{{
row.verdict }}</td></tr>
{% endif %}
{% endfor %}
</table>
{% endif %}

<h2>Confidence intervals per stratum</h2>
<div class="charts">{% for chart in interval_charts %}{{ chart }}{% endfor %}</div>

<h2>Score distributions</h2>
<div class="charts">{% for chart in histograms %}{{ chart }}{% endfor %}</div>

<h2>Trend over past runs</h2>
<div class="charts">{% for chart in trend_charts %}{{ chart }}{% endfor %}</div>

<h2>Worst items</h2>
<p class="muted">Ranked by the mean of each item's ok scores on higher-is-better metrics, lowest first.</p>
{% for w in worst %}
<div class="item">
<p><b>{{ w.item_id }}</b> · {{ w.stratum }}
{% if w.view and w.view.attribution %} · {{ w.view.attribution }}{% endif %}
· mean of its scores {{ w.rank_value|num }}</p>
<p>{% for s in w.scores %}{{ s.metric }}={% if s.status == "ok" %}{{ s.value|num }}{% else %}<span class="fail">{{
s.status }}</span>{% endif %}{% if not loop.last %} · {% endif %}{% endfor %}</p>
{% for s in w.scores if s.status == "ok" and s.error %}<p class="muted">{{ s.metric }}: {{ s.error }}</p>
{% endfor %}
{% if w.view %}
<p><b>Question</b></p><pre>{{ w.view.question }}</pre>
<p><b>Answer</b></p><pre>{{ w.view.answer }}</pre>
{% if w.view.reference_answer %}<p><b>Reference answer</b></p><pre>{{ w.view.reference_answer }}</pre>{% endif %}
{% if w.view.correctness %}<p><b>Correctness judge</b>: {{ w.view.correctness }}</p>{% endif %}
<details><summary>{{ w.view.contexts|length }} retrieved context(s)</summary>
{% for c in w.view.contexts %}<pre>[{{ loop.index }}] {{ c }}</pre>{% endfor %}
</details>
{% endif %}
</div>
{% else %}
<p class="muted">No item has an ok score.</p>
{% endfor %}

<h2>Cost of this run</h2>
{% if cost %}
<p>{{ "{:,}".format(cost.total("requests")) }} requests sent to the model servers ({{ cost.per_item("requests")|num }} per
item over {{ cost.items }} items), {{ "{:,}".format(cost.total("cache_hits")) }} answered by the LLM cache instead;
{{ "{:,}".format(cost.total("prompt_tokens")) }} prompt and {{ "{:,}".format(cost.total("completion_tokens")) }} completion
tokens as the servers reported them ({{ cost.per_item("prompt_tokens")|num }} and {{ cost.per_item("completion_tokens")|num }}
per item); {{ cost.total("llm_seconds")|num }} LLM-seconds (each request's wall time from sending to the reply, summed:
concurrent requests overlap).</p>
{% if cost.budget %}
<p>Token budget (RAGWATCH_LLM_BUDGET_TOKENS): {{ "{:,}".format(cost.budget.cap) }} tokens, prompt + completion
({{ "{:,}".format(cost.budget.prepare_tokens) }} spent answering before the judge batches, which then had
{{ "{:,}".format(cost.budget.per_batch) }} each). <strong>{{ "{:,}".format(cost.skipped_for_budget) }} scores skipped
for the budget</strong> (status skipped, reason "budget": no request was sent for them; the gate counts them as
missing).</p>
{% endif %}
<table>
<tr><th>stage</th><th>metric</th><th>model</th><th>requests</th><th>per item</th><th>cache hits</th>
<th>prompt tokens</th><th>completion tokens</th><th>LLM-seconds</th><th>failed calls</th></tr>
{% for row in cost.rows %}
<tr><td title="{{ stages.get(row.stage, '') }}">{{ row.stage }}</td><td>{{ row.metric }}</td>
<td>{{ row.model }} ({{ row.role }})</td><td class="num">{{ "{:,}".format(row.requests) }}</td>
<td class="num">{{ (row.requests / cost.items if cost.items else None)|num }}</td>
<td class="num">{{ "{:,}".format(row.cache_hits) }}</td><td class="num">{{ "{:,}".format(row.prompt_tokens) }}</td>
<td class="num">{{ "{:,}".format(row.completion_tokens) }}</td><td class="num">{{ row.llm_seconds|num }}</td>
<td class="num">{{ row.failures }}</td></tr>
{% endfor %}
</table>
{% else %}
<p class="muted">Not recorded (a run saved before ragwatch counted its requests).</p>
{% endif %}
{% if cost_trend %}
<h3>Cost week by week</h3>
<p>The successful runs of this suite and target per ISO week (Monday to Sunday) of their logical dates, this run
included: their requests and prompt + completion tokens summed, per run and per item. A week without a run with a
recorded cost is empty, not 0.</p>
{{ cost_trend_chart }}
<table>
<tr><th>week of</th><th>runs</th><th>requests</th><th>per run</th><th>tokens</th><th>per run</th><th>per item</th>
<th>cache hits</th></tr>
{% for w in cost_trend %}
<tr><td>{{ w.week }}</td><td class="num">{{ w.runs }}
{%- if w.unrecorded_runs %} (+{{ w.unrecorded_runs }} unrecorded){% endif %}</td>
{% if w.runs %}<td class="num">{{ "{:,}".format(w.requests) }}</td>
<td class="num">{{ w.per_run("requests")|amount }}</td>
<td class="num">{{ "{:,}".format(w.tokens) }}</td><td class="num">{{ w.per_run("tokens")|amount }}</td>
<td class="num">{{ w.per_item("tokens")|amount }}</td><td class="num">{{ "{:,}".format(w.cache_hits) }}</td>
{% else %}<td></td><td></td><td></td><td></td><td></td><td></td>{% endif %}</tr>
{% endfor %}
</table>
{% endif %}

<h2>Scores that failed</h2>
{% if failures %}
<table>
<tr><th>metric</th><th>items</th><th>error</th><th>examples</th></tr>
{% for f in failures %}
<tr><td>{{ f.metric }}</td><td class="num">{{ f.count }}</td><td><pre>{{ f.error }}</pre></td>
<td>{{ f.examples|join(", ") }}</td></tr>
{% endfor %}
</table>
{% else %}
<p class="muted">None.</p>
{% endif %}
</body>
</html>
"""
