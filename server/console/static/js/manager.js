// The manager's pages: one per queue and one per workflow, each a list of panels.
//
// A panel is one fixed operation (operations.js), the variables it takes from the page, and
// one render function; a live panel starts subscriptions instead. The page runs every
// panel's operation, renders each into its own card, and runs again those whose
// `refreshOn` names a live change it saw. Adding a figure set is one operation, one render
// function and one entry in QUEUE_PANELS or WORKFLOW_PANELS. A panel with an `input`
// ({variable, label}) gets a number box in its head; what is typed there becomes that
// variable of its operation, and only that panel reads again.

import { call } from "./api.js";
import { startWaitingItems } from "./bulk.js";
import { bars, liveTimeSeries, shareBar } from "./charts.js";
import { badge, errorBox, facts, figure, fill, h, spinner, wide } from "./dom.js";
import { clock, count, decimal, duration, minutesPerDay, percent, preciseDuration, verdictWord, words } from "./format.js";
import * as live from "./live.js";
import * as ops from "./operations.js";

// Live changes come in bursts (a claim, then a decision): read again once they settle.
const REFRESH_AFTER_MS = 1000;
// The backlog chart adds a point this often even without news: the oldest pending age grows
// with the clock while nothing happens.
const CHART_TICK_MS = 5000;

// ---- Panels of a queue ------------------------------------------------------------------

function renderQueueNow(body, data) {
  const stats = data.queue.stats;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Pending", count(stats.pending), { figureId: "pending", note: "claimable now" }),
      figure("Leased", count(stats.leased), { figureId: "leased", note: "under a live lease" }),
      figure("On hold", count(stats.held), { figureId: "held", note: "parked until a time" }),
      figure("Assigned", count(stats.assigned), { figureId: "assigned", note: "reserved for one reviewer" }),
      figure("Overdue", count(stats.overdue), {
        figureId: "overdue",
        tone: stats.overdue ? "alert" : null,
        note: "past their due time",
      }),
      figure("Oldest pending", duration(stats.oldestPendingAgeSeconds), { figureId: "oldestPendingAgeSeconds", seconds: stats.oldestPendingAgeSeconds }),
      figure("Unapplied decisions", count(stats.unappliedDecisions), { figureId: "unappliedDecisions", note: "decided, not yet carried out" }),
      figure("Unapplied over 60 s", count(stats.unappliedOlderThanThreshold), {
        figureId: "unappliedOlderThanThreshold",
        tone: stats.unappliedOlderThanThreshold ? "alert" : null,
        note: "the alert: decided and not carried out",
      }),
      figure("Oldest unapplied", duration(stats.oldestUnappliedAgeSeconds), { figureId: "oldestUnappliedAgeSeconds", seconds: stats.oldestUnappliedAgeSeconds }),
      figure("Failed applications", count(stats.failedApplications), {
        figureId: "failedApplications",
        tone: stats.failedApplications ? "alert" : null,
        note: "a person must look (Exceptions)",
      }),
    ),
  );
}

function renderQueueSettings(body, data) {
  const q = data.queue;
  fill(
    body,
    facts([
      ["Worked by", `${q.holderRole}s`],
      ["Lease TTL", duration(q.leaseTtlSeconds)],
      ["Max abandons", String(q.maxAbandons)],
      ["Escalates to", q.escalationQueue ?? "–"],
      ["Escalation boost", String(q.escalationPriorityBoost)],
      ["Effect", q.effectKind === "NONE" ? "none" : `${words(q.effectKind)}${q.effectTarget ? ` → ${q.effectTarget}` : ""}`],
      ["Effect attempts", String(q.effectMaxAttempts)],
      ["Effect timeout", `${q.effectTimeoutSeconds} s`],
      ["Second review", secondReviewWords(q.secondReview), { "data-fact": "secondReview" }],
      ["QA sample rate", q.qaSampleRate ? `${percent(q.qaSampleRate)} of decisions → ${q.qaQueue ?? `${q.name}-qa`}` : "Off", { "data-fact": "qaSampleRate", "data-value": String(q.qaSampleRate) }],
    ]),
  );
}

/** "Reject, escalate at priority 50 or above → kyc-second-review", or "Off". */
function secondReviewWords(review) {
  if (!review || !review.verdicts.length) return "Off";
  const verdicts = review.verdicts.map((v) => verdictWord(v).toLowerCase()).join(", ");
  const priority = review.minPriority === null || review.minPriority === undefined ? "" : ` at priority ${review.minPriority} or above`;
  return `${verdicts.charAt(0).toUpperCase()}${verdicts.slice(1)}${priority} → ${review.queue}`;
}

function renderReasonCodes(body, data) {
  const codes = data.queue.reasonCodes;
  fill(
    body,
    codes.length
      ? wide(h(
          "table",
          { class: "data", "aria-label": "Reason codes" },
          h("thead", {}, h("tr", {}, h("th", {}, "Code"), h("th", {}, "Label"), h("th", {}, "Verdicts"), h("th", {}, "Note"))),
          h(
            "tbody",
            {},
            codes.map((c) =>
              h("tr", {}, h("td", {}, h("code", { text: c.code })), h("td", { text: c.label }), h("td", {}, c.verdicts.map((v) => badge(words(v), v.toLowerCase()))), h("td", { text: c.requiresNote ? "Required" : "Optional" })),
            ),
          ),
        ))
      : h("p", { class: "muted" }, "No reason codes: an admin defines them (defineReasonCode)."),
  );
}

/** Backlog and oldest pending age since the page opened, from queueBacklog. */
function startBacklogChart(body, page, scope) {
  const chart = liveTimeSeries(
    [
      { label: "Pending", scale: "count" },
      { label: "Leased", scale: "count" },
      { label: "Oldest pending", scale: "minutes", color: "#c0504d" },
    ],
    { label: `Backlog of ${page.name} since this page opened` },
  );
  const note = h("p", { class: "read-at", "aria-live": "off" }, "Waiting for the first figures…");
  fill(body, chart.node, note);
  let last = null;
  let lastAt = 0;
  let snapshots = 0;
  const point = (backlog, at) => {
    const age = backlog.oldestPendingAgeSeconds;
    chart.push(at / 1000, [backlog.pending, backlog.leased, age === null ? null : age / 60]);
  };
  scope.subscribe(ops.QUEUE_BACKLOG, { queue: page.name }, (data) => {
    last = data.queueBacklog;
    lastAt = Date.now();
    point(last, lastAt);
    fill(note, `${chart.points()} ${chart.points() === 1 ? "point" : "points"} · last change ${clock(new Date(lastAt))}${last.resync ? " (fresh snapshot after a reconnect)" : ""}`);
    // The first message is the snapshot the panels were read with; later ones are news
    // (a reconnect reads every panel again by itself).
    snapshots += 1;
    if (snapshots > 1) page.changed("backlog");
  });
  scope.every(CHART_TICK_MS, () => {
    if (!last || live.connectionState() !== "live") return;
    // Nothing changed since the last figure, so the same items wait, each older by now.
    const now = Date.now();
    const aged = last.oldestPendingAgeSeconds === null ? null : last.oldestPendingAgeSeconds + (now - lastAt) / 1000;
    point({ ...last, oldestPendingAgeSeconds: aged }, now);
  });
}

// ---- Queue.measures ---------------------------------------------------------------------
// Every measures panel reads the same QUEUE_MEASURES (one request per page load), except
// the capacity panel once its minutes are typed. The window is the API's default.

const WINDOW = "the last 7 days";

/** "Never opened", "1 lease", "3 leases". */
function leases(n) {
  return n === 0 ? "Never opened" : n === 1 ? "1 lease" : `${n} leases`;
}

function empty(text) {
  return h("p", { class: "chart-empty", text });
}

function renderQueueWindow(body, data) {
  const m = data.queue.measures;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Arrivals", count(m.arrivals), { figureId: "arrivals", raw: m.arrivals, note: "items enqueued" }),
      figure("Decided", count(m.decided), { figureId: "decided", raw: m.decided, note: "first decisions" }),
      figure("Overturned", count(m.overturned), {
        figureId: "overturned",
        raw: m.overturned,
        tone: m.overturned ? "warning" : null,
        note: m.decided ? `${percent(m.overturned / m.decided)} of the decisions` : "of those decisions, since",
      }),
      figure("Escalated", count(m.escalated), { figureId: "escalated", raw: m.escalated, note: "of the decisions" }),
      figure("Backlog", count(m.backlog), { figureId: "backlog", raw: m.backlog, note: "pending now, leased or not" }),
      figure("Lapsed leases", count(m.lapsedLeases), { figureId: "lapsedLeases", raw: m.lapsedLeases, note: "ran out undecided" }),
      figure("Released leases", count(m.releasedLeases), { figureId: "releasedLeases", raw: m.releasedLeases, note: "given back" }),
    ),
  );
}

function leaseBars(buckets, label) {
  return bars(
    buckets.map((b) => ({ key: String(b.leaseCount), label: leases(b.leaseCount), value: b.items })),
    { label },
  );
}

function renderLeaseCounts(body, data) {
  const m = data.queue.measures;
  const decided = m.leaseCountAtDecision.reduce((sum, b) => sum + b.items, 0);
  const reopened = m.leaseCountAtDecision.filter((b) => b.leaseCount > 1).reduce((sum, b) => sum + b.items, 0);
  fill(
    body,
    h(
      "div",
      { class: "split" },
      h(
        "div",
        {},
        h("h3", { class: "sub-title", text: `Decided in ${WINDOW}` }),
        decided ? leaseBars(m.leaseCountAtDecision, "Leases per item at decision") : empty(`No decision in ${WINDOW}.`),
        decided
          ? h("p", { class: "figure-note", "data-figure": "sharePastFirstLease", "data-value": String(reopened / decided) }, `${percent(reopened / decided)} needed more than one lease.`)
          : null,
      ),
      h(
        "div",
        {},
        h("h3", { class: "sub-title", text: "Pending now" }),
        m.leaseCountPending.length ? leaseBars(m.leaseCountPending, "Leases per pending item") : empty("Nothing is pending."),
      ),
    ),
    h("p", { class: "hint" }, "An item opened and left undecided is claimed again. A growing share past one lease says the rules do not tell reviewers what to do with those items."),
  );
}

function renderReasonMix(body, data) {
  const m = data.queue.measures;
  const labels = new Map(data.queue.reasonCodes.map((c) => [c.code, c.label]));
  fill(
    body,
    m.reasons.length
      ? wide(h(
          "table",
          { class: "data", "aria-label": "Reason mix" },
          h("thead", {}, h("tr", {}, h("th", {}, "Reason"), h("th", {}, "Verdict"), h("th", { class: "num" }, "Decisions"), h("th", { class: "num" }, "Share"), h("th", { "aria-hidden": "true" }))),
          h(
            "tbody",
            {},
            m.reasons.map((r) =>
              h(
                "tr",
                { "data-row": `${r.code}:${r.verdict}` },
                h("td", {}, h("div", { text: labels.get(r.code) ?? r.code }), h("code", { class: "small muted", text: r.code })),
                h("td", {}, badge(verdictWord(r.verdict), r.verdict.toLowerCase())),
                h("td", { class: "num", "data-field": "count", "data-value": String(r.count), text: count(r.count) }),
                h("td", { class: "num", "data-field": "share", "data-value": String(r.share), text: percent(r.share) }),
                h("td", { class: "bar-cell" }, shareBar(r.share)),
              ),
            ),
          ),
        ))
      : empty(`No decision in ${WINDOW}.`),
    m.reasons.length ? h("p", { class: "hint" }, "A reason that dominates is a candidate for a rule: a person need not decide it.") : null,
  );
}

const PERCENTILE_ROWS = [
  ["p50", "Median (p50)"],
  ["p90", "p90"],
  ["p99", "p99"],
  ["max", "Longest"],
];

/** A Percentiles as bars of durations, or a sentence when there are no samples. */
function percentileBars(percentiles, label, none) {
  if (!percentiles.samples) return empty(none);
  return [
    bars(
      PERCENTILE_ROWS.map(([key, text]) => ({ key, label: text, value: percentiles[key] })),
      { label, format: preciseDuration, wide: true },
    ),
    h("p", { class: "figure-note", "data-samples": String(percentiles.samples) }, `${count(percentiles.samples)} ${percentiles.samples === 1 ? "sample" : "samples"}`),
  ];
}

function renderQueueTimes(body, data) {
  const m = data.queue.measures;
  fill(
    body,
    h(
      "div",
      { class: "split" },
      h(
        "div",
        {},
        h("h3", { class: "sub-title", text: "Hands-on: lease start to decision" }),
        percentileBars(m.handlingSeconds, "Hands-on time", `No timed decision in ${WINDOW}.`),
      ),
      h(
        "div",
        {},
        h("h3", { class: "sub-title", text: "Elapsed: enqueue to decision" }),
        percentileBars(m.timeToDecisionSeconds, "Time to decision", `No decision in ${WINDOW}.`),
      ),
    ),
    h("p", { class: "hint" }, "Hands-on time is a person's work; elapsed time adds the wait in the queue. Only hands-on time counts as labour below."),
  );
}

function renderLeaseTtl(body, data) {
  const q = data.queue;
  const m = q.measures;
  const recommended = m.recommendedLeaseTtlSeconds;
  const short = recommended !== null && recommended > q.leaseTtlSeconds;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Lease TTL now", preciseDuration(q.leaseTtlSeconds), { figureId: "leaseTtlSeconds", raw: q.leaseTtlSeconds }),
      figure("Recommended", recommended === null ? "–" : preciseDuration(recommended), {
        figureId: "recommendedLeaseTtlSeconds",
        raw: recommended,
        tone: short ? "warning" : null,
        note: recommended === null ? "needs 50 timed decisions" : "p99 of hands-on × 1.25",
      }),
      figure("Cut off by the TTL", percent(m.leaseCutOffShare), {
        figureId: "leaseCutOffShare",
        raw: m.leaseCutOffShare,
        tone: m.leaseCutOffShare ? "warning" : null,
        note: "reviews that outlasted it (renewed)",
      }),
      figure("Lapsed", percent(m.lapsedLeaseShare), {
        figureId: "lapsedLeaseShare",
        raw: m.lapsedLeaseShare,
        note: "of the leases that ended",
      }),
    ),
    h("p", { class: "advice", "data-figure": "leaseTtlAdvice", text: m.leaseTtlAdvice }),
  );
}

function renderQueueCapacity(body, data, page, variables) {
  const q = data.queue;
  renderCapacity(body, q.measures.capacity, {
    typed: variables.minutes,
    setting: q.reviewerMinutesPerDay,
    settingName: "the queue's setting",
    who: "reviewers",
  });
}

/** The Capacity figures, and a sentence that says what they mean. */
function renderCapacity(body, c, { typed, setting, settingName, who }) {
  const source =
    typed !== null && typed !== undefined
      ? "the minutes typed above"
      : setting !== null && setting !== undefined
        ? `${settingName} (${minutesPerDay(setting)} a day)`
        : null;
  const verdict =
    c.enough === null
      ? h("p", { class: "advice", "data-figure": "verdict" }, c.availableMinutesPerDay === null
          ? `Type the hands-on minutes your ${who} have a day, together, to see whether they are enough.`
          : `Not known yet: no timed work in ${WINDOW} to say how long an item takes.`)
      : h(
          "p",
          { class: ["advice", c.enough ? "advice-good" : "advice-bad"], "data-figure": "verdict" },
          c.enough
            ? `Enough: ${minutesPerDay(c.headroomMinutesPerDay)} a day to spare, from ${source}.`
            : `Not enough: ${minutesPerDay(-c.headroomMinutesPerDay)} a day short, from ${source}.`,
        );
  const tile = (label, field, text, note, extra = {}) => figure(label, text, { figureId: field, raw: c[field], note, ...extra });
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      tile("Arrivals a day", "arrivalsPerDay", decimal(c.arrivalsPerDay), `over ${WINDOW}`),
      tile("Hands-on, mean", "handlingMinutesMean", c.handlingMinutesMean === null ? "–" : preciseDuration(c.handlingMinutesMean * 60), "per item"),
      tile("Demand", "demandMinutesPerDay", minutesPerDay(c.demandMinutesPerDay), "a day: arrivals × hands-on"),
      tile("Backlog", "backlog", count(c.backlog), "items waiting"),
      tile("Backlog work", "backlogMinutesPerDay", minutesPerDay(c.backlogMinutesPerDay), "a day, to clear it in 5 days"),
      tile("Available", "availableMinutesPerDay", minutesPerDay(c.availableMinutesPerDay), source ? `a day, from ${source}` : "a day: not set"),
      tile("Headroom", "headroomMinutesPerDay", minutesPerDay(c.headroomMinutesPerDay), "a day: available − demand − backlog", {
        tone: c.enough === false ? "alert" : null,
      }),
    ),
    verdict,
  );
}

function renderReviewers(body, data) {
  const rows = data.queue.measures.reviewers;
  fill(
    body,
    rows.length
      ? [
          wide(h(
            "table",
            { class: "data", "aria-label": "Reviewers" },
            h(
              "thead",
              {},
              h("tr", {}, h("th", {}, "Reviewer"), h("th", { class: "num" }, "Decided"), h("th", { class: "num" }, "Overturned"), h("th", { class: "num" }, "Hands-on p50"), h("th", { class: "num" }, "Hands-on p90"), h("th", { class: "num" }, "Lapsed leases")),
            ),
            h(
              "tbody",
              {},
              rows.map((r) =>
                h(
                  "tr",
                  { "data-row": r.reviewer },
                  h("td", { text: r.reviewer }),
                  h("td", { class: "num", "data-field": "decided", "data-value": String(r.decided), text: count(r.decided) }),
                  h(
                    "td",
                    { class: ["num", r.overturned && "num-warning"], "data-field": "overturned", "data-value": String(r.overturned) },
                    count(r.overturned),
                    r.decided ? h("span", { class: "muted small", text: ` (${percent(r.overturned / r.decided)})` }) : null,
                  ),
                  h("td", { class: "num", "data-field": "p50", "data-value": String(r.handlingSeconds.p50), text: preciseDuration(r.handlingSeconds.p50) }),
                  h("td", { class: "num", "data-field": "p90", "data-value": String(r.handlingSeconds.p90), text: preciseDuration(r.handlingSeconds.p90) }),
                  h("td", { class: "num", "data-field": "lapsedLeases", "data-value": String(r.lapsedLeases), text: count(r.lapsedLeases) }),
                ),
              ),
            ),
          )),
          h("p", { class: "hint" }, "Throughput only beside its quality: read a row as a whole, and rank nobody on decisions alone."),
        ]
      : empty(`Nobody decided or let a lease lapse in ${WINDOW}.`),
  );
}

/** "80% (8 of 10)": a rate with the counts it is made of; "no results yet" without any. */
function rateWithCounts(rate, part, whole) {
  if (!whole) return "no results yet";
  return `${percent(rate ?? part / whole)} (${count(part)} of ${count(whole)})`;
}

/** The agreement table of one breakdown (by reason code, by reviewer), with its caption. */
function agreementTable(rows, { caption, key, head, label }) {
  return wide(h(
    "table",
    { class: "data" },
    h("caption", { class: "table-caption", text: caption }),
    h(
      "thead",
      {},
      h("tr", {}, h("th", { scope: "col" }, head), ["Decided", "Sampled", "Checked", "Agreed", "Agreement", "Overturned"].map((t) => h("th", { scope: "col", class: "num", text: t }))),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { "data-row": r[key] },
          h("th", { scope: "row" }, label(r[key])),
          h("td", { class: "num", "data-field": "decided", "data-value": String(r.decided), text: count(r.decided) }),
          h("td", { class: "num", "data-field": "sampled", "data-value": String(r.sampled), text: count(r.sampled) }),
          h("td", { class: "num", "data-field": "checked", "data-value": String(r.checked), text: count(r.checked) }),
          h("td", { class: "num", "data-field": "agreed", "data-value": String(r.agreed), text: count(r.agreed) }),
          h(
            "td",
            { class: ["num", r.checked && r.agreed < r.checked && "num-warning"], "data-field": "agreementRate", "data-value": String(r.agreementRate) },
            rateWithCounts(r.agreementRate, r.agreed, r.checked),
          ),
          h(
            "td",
            { class: ["num", r.overturned && "num-warning"], "data-field": "overturnRate", "data-value": String(r.overturnRate) },
            r.decided ? rateWithCounts(r.overturnRate, r.overturned, r.decided) : "–",
          ),
        ),
      ),
    ),
  ));
}

function renderQuality(body, data) {
  const q = data.queue;
  const m = q.measures.quality;
  const labels = new Map(q.reasonCodes.map((c) => [c.code, c.label]));
  const disagreed = m.checked - m.agreed;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Agreement rate", m.checked ? percent(m.agreementRate) : "–", {
        figureId: "agreementRate",
        raw: m.agreementRate,
        tone: disagreed ? "warning" : null,
        note: m.checked ? `${count(m.agreed)} agreed of ${count(m.checked)} checked` : "no results yet",
      }),
      figure("Sampled", count(m.sampled), { figureId: "sampled", raw: m.sampled, note: "decisions copied for QA" }),
      figure("Checked", count(m.checked), { figureId: "checked", raw: m.checked, note: m.sampled ? `${count(m.sampled - m.checked)} waiting for a check` : "QA results recorded" }),
      figure("Agreed", count(m.agreed), { figureId: "agreed", raw: m.agreed, note: `${count(disagreed)} disagreed` }),
      figure("Overturn rate", m.overturnRate === null || m.overturnRate === undefined ? "–" : percent(m.overturnRate), {
        figureId: "overturnRate",
        raw: m.overturnRate,
        tone: m.overturned ? "warning" : null,
        note: m.overturnRate === null || m.overturnRate === undefined ? "no decisions yet" : `${count(m.overturned)} overturned of ${count(m.decided)} approved or rejected`,
      }),
    ),
    m.checked
      ? h(
          "div",
          { class: "quality-tables" },
          agreementTable(m.byReasonCode, {
            caption: "Agreement by reason code",
            key: "key",
            head: "Reason",
            label: (code) => [h("div", { text: labels.get(code) ?? code }), h("code", { class: "small muted", text: code })],
          }),
          agreementTable(m.byReviewer, { caption: "Agreement by reviewer", key: "key", head: "Reviewer", label: (who) => who }),
        )
      : empty(m.sampled ? "No QA results yet: the sampled decisions wait in the QA queue." : "No QA results yet: no decision was sampled in this window."),
    h("p", { class: "hint" }, "Agreement is what QA reviewers found on a sample of effective decisions; read it beside the overturn rate, and with its counts: a rate on few checks says little."),
  );
}

const REVIEWER_MINUTES = { variable: "minutes", label: "Available reviewer minutes per day" };

const QUEUE_PANELS = [
  { id: "now", title: "Now", operation: ops.QUEUE_STATS, render: renderQueueNow, refreshOn: "backlog" },
  { id: "items", title: "Waiting items", live: startWaitingItems },
  { id: "backlog", title: "Backlog since this page opened", live: startBacklogChart },
  { id: "window", title: `Decisions, ${WINDOW}`, operation: ops.QUEUE_MEASURES, render: renderQueueWindow, refreshOn: "backlog" },
  { id: "leaseCounts", title: "Leases per item", operation: ops.QUEUE_MEASURES, render: renderLeaseCounts, refreshOn: "backlog", half: true },
  { id: "reasonMix", title: `Reason mix, ${WINDOW}`, operation: ops.QUEUE_MEASURES, render: renderReasonMix, refreshOn: "backlog", half: true },
  { id: "times", title: `Handling time, ${WINDOW}`, operation: ops.QUEUE_MEASURES, render: renderQueueTimes, refreshOn: "backlog" },
  { id: "leaseTtl", title: "Lease TTL", operation: ops.QUEUE_MEASURES, render: renderLeaseTtl, refreshOn: "backlog" },
  { id: "capacity", title: "Capacity", operation: ops.QUEUE_MEASURES, render: renderQueueCapacity, refreshOn: "backlog", input: REVIEWER_MINUTES },
  { id: "reviewers", title: `Reviewers, ${WINDOW}`, operation: ops.QUEUE_MEASURES, render: renderReviewers, refreshOn: "backlog" },
  { id: "quality", title: `Quality, ${WINDOW}`, operation: ops.QUEUE_MEASURES, render: renderQuality, refreshOn: "backlog" },
  { id: "settings", title: "Settings", operation: ops.QUEUE_SETTINGS, render: renderQueueSettings, half: true },
  { id: "reasons", title: "Reason codes", operation: ops.QUEUE_SETTINGS, render: renderReasonCodes, half: true },
];

// ---- Panels of a workflow ---------------------------------------------------------------
// Figures from Workflow.measures (one WORKFLOW_MEASURES read per page load; each capacity
// panel reads again with its own minutes once they are typed), and the catalogue.

const CONSEQUENCES = ["CRITICAL", "HIGH", "MEDIUM", "LOW"];

function reasonLabels(data) {
  return new Map(data.workflow.reasons.map((r) => [r.code, r.label]));
}

function missingWorkflow(body, data, page) {
  if (data.workflow) return false;
  fill(body, errorBox(`There is no workflow ${page.name} that your token covers.`));
  return true;
}

function renderWorkflowNow(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const m = data.workflow.measures;
  const oldest = m.ageByReason.length ? Math.max(...m.ageByReason.map((r) => r.oldestAgeSeconds)) : null;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Open", count(m.open), { figureId: "open", raw: m.open, note: "not closed" }),
      figure("Unclaimed, new", count(m.unclaimedNew), { figureId: "unclaimedNew", raw: m.unclaimedNew, note: "waiting for a person, not yet due" }),
      figure("Unclaimed, overdue", count(m.unclaimedOverdue), {
        figureId: "unclaimedOverdue",
        raw: m.unclaimedOverdue,
        tone: m.unclaimedOverdue ? "alert" : null,
        note: "past due, nobody holds it: routing or staffing",
      }),
      figure("Oldest open", duration(oldest), { figureId: "oldestOpen", seconds: oldest ?? undefined, note: "since it last opened" }),
      figure("Raised", count(m.raised), { figureId: "raised", raw: m.raised, note: `new ones in ${WINDOW}` }),
      figure("Closed", count(m.closures.total), { figureId: "closed", raw: m.closures.total, note: `in ${WINDOW}` }),
    ),
  );
}

function renderAgeByReason(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const labels = reasonLabels(data);
  const rows = data.workflow.measures.ageByReason;
  const byReason = new Map();
  for (const row of rows) byReason.set(row.reasonCode, (byReason.get(row.reasonCode) ?? 0) + row.open);
  fill(
    body,
    rows.length
      ? [
          bars(
            [...byReason].sort((a, b) => b[1] - a[1]).map(([code, open]) => ({ key: code, label: labels.get(code) ?? code, value: open, note: code })),
            { label: "Open exceptions by reason" },
          ),
          wide(h(
            "table",
            { class: "data", "aria-label": "Age by reason" },
            h("thead", {}, h("tr", {}, h("th", {}, "Reason"), h("th", {}, "Consequence"), h("th", { class: "num" }, "Open"), h("th", { class: "num" }, "Oldest"), h("th", { class: "num" }, "Median age"))),
            h(
              "tbody",
              {},
              rows.map((r) =>
                h(
                  "tr",
                  { "data-row": `${r.reasonCode}:${r.consequence}` },
                  h("td", {}, h("code", { text: r.reasonCode })),
                  h("td", { text: words(r.consequence) }),
                  h("td", { class: "num", "data-field": "open", "data-value": String(r.open), text: count(r.open) }),
                  h("td", { class: "num", "data-field": "oldestAgeSeconds", "data-seconds": String(r.oldestAgeSeconds), text: duration(r.oldestAgeSeconds) }),
                  h("td", { class: "num", "data-field": "p50AgeSeconds", "data-seconds": String(r.p50AgeSeconds), text: duration(r.p50AgeSeconds) }),
                ),
              ),
            ),
          )),
          h("p", { class: "hint" }, "Ages by reason and consequence, never one average: an average hides the one that is stuck."),
        ]
      : empty("Nothing open."),
  );
}

function renderOpenByConsequence(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const rows = data.workflow.measures.ageByReason;
  fill(
    body,
    bars(
      CONSEQUENCES.map((c) => ({ key: c, label: words(c), value: rows.filter((r) => r.consequence === c).reduce((sum, r) => sum + r.open, 0) })),
      { label: "Open exceptions by consequence" },
    ),
  );
}

function renderRepeats(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const labels = reasonLabels(data);
  const rows = data.workflow.measures.repeats;
  fill(
    body,
    rows.length
      ? [
          wide(h(
            "table",
            { class: "data", "aria-label": "Repeats" },
            h("thead", {}, h("tr", {}, h("th", {}, "Reason"), h("th", { class: "num" }, "Raised"), h("th", { class: "num" }, "Recurrences"), h("th", { class: "num" }, "Sources again"), h("th", { class: "num" }, "Repeat share"))),
            h(
              "tbody",
              {},
              rows.map((r) =>
                h(
                  "tr",
                  { "data-row": r.reasonCode },
                  h("td", {}, h("div", { text: labels.get(r.reasonCode) ?? r.reasonCode }), h("code", { class: "small muted", text: r.reasonCode })),
                  h("td", { class: "num", "data-field": "raised", "data-value": String(r.raised), text: count(r.raised) }),
                  h("td", { class: "num", "data-field": "recurrences", "data-value": String(r.recurrences), text: count(r.recurrences) }),
                  h("td", { class: "num", "data-field": "sourcesWithRepeats", "data-value": String(r.sourcesWithRepeats), text: count(r.sourcesWithRepeats) }),
                  h("td", { class: "num", "data-field": "repeatShare", "data-value": String(r.repeatShare), text: percent(r.repeatShare) }),
                ),
              ),
            ),
          )),
          h("p", { class: "hint" }, "A reason that keeps coming back for the same records is an upstream defect worth fixing at its source."),
        ]
      : empty(`Nothing raised in ${WINDOW}.`),
  );
}

function renderOutcomes(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const m = data.workflow.measures;
  const r = m.redrives;
  const c = m.closures;
  fill(
    body,
    h(
      "div",
      { class: "split split-outcomes" },
      h(
        "div",
        {},
    h("h3", { class: "sub-title", text: "Redrives" }),
    h(
      "dl",
      { class: "figures figures-compact" },
      figure("Requested", count(r.requested), { figureId: "redrivesRequested", raw: r.requested }),
      figure("Succeeded", count(r.succeeded), { figureId: "redrivesSucceeded", raw: r.succeeded }),
      figure("Failed", count(r.failed), { figureId: "redrivesFailed", raw: r.failed, tone: r.failed ? "warning" : null }),
      figure("Success rate", percent(r.successRate), { figureId: "redriveSuccessRate", raw: r.successRate, note: "of the results reported" }),
    ),
      ),
      h(
        "div",
        {},
    h("h3", { class: "sub-title", text: "Closures and reopens" }),
    h(
      "dl",
      { class: "figures figures-compact" },
      figure("Corrected", count(c.corrected), { figureId: "corrected", raw: c.corrected, note: "a redrive succeeded" }),
      figure("Rejected", count(c.rejected), { figureId: "rejected", raw: c.rejected }),
      figure("Duplicate", count(c.duplicate), { figureId: "duplicate", raw: c.duplicate }),
      figure("Obsolete", count(c.obsolete), { figureId: "obsolete", raw: c.obsolete }),
      figure("Reopened", count(m.reopened), { figureId: "reopened", raw: m.reopened, tone: m.reopened ? "warning" : null }),
      figure("Reopen rate", percent(m.reopenRate), { figureId: "reopenRate", raw: m.reopenRate, note: "reopens ÷ closures" }),
    ),
      ),
    ),
    h("p", { class: "hint" }, "Closures are not a target: a closure that reopens was not done. Read them beside the reopen rate."),
  );
}

function renderWorkflowTimes(body, data, page) {
  if (missingWorkflow(body, data, page)) return;
  const m = data.workflow.measures;
  fill(
    body,
    h(
      "div",
      { class: "split split-3" },
      h("div", {}, h("h3", { class: "sub-title", text: "Operators, hands-on" }), percentileBars(m.handlingSeconds, "Operators' hands-on time", `No timed correction or closure in ${WINDOW}.`)),
      h("div", {}, h("h3", { class: "sub-title", text: "Approvers, hands-on" }), percentileBars(m.approverHandlingSeconds, "Approvers' hands-on time", `No timed approval in ${WINDOW}.`)),
      h("div", {}, h("h3", { class: "sub-title", text: "Waiting for approval" }), percentileBars(m.approvalSeconds, "Approval time", `No correction approved in ${WINDOW}.`)),
    ),
    h("p", { class: "hint" }, "Waiting for approval is elapsed time, submission to approval: a different person supplies it, so it is shown apart."),
  );
}

function renderWorkflowCapacity(body, data, page, variables) {
  if (missingWorkflow(body, data, page)) return;
  const w = data.workflow;
  renderCapacity(body, w.measures.capacity, { typed: variables.minutes, setting: w.reviewerMinutesPerDay, settingName: "the workflow's setting", who: "operators" });
}

function renderApprovalCapacity(body, data, page, variables) {
  if (missingWorkflow(body, data, page)) return;
  const w = data.workflow;
  renderCapacity(body, w.measures.approvalCapacity, { typed: variables.approverMinutes, setting: w.approverMinutesPerDay, settingName: "the workflow's setting", who: "approvers" });
}

function renderCatalogue(body, data, page) {
  const workflow = data.workflows.find((w) => w.name === page.name);
  if (!workflow) {
    fill(body, errorBox(`There is no workflow ${page.name} that your token covers.`));
    return;
  }
  fill(
    body,
    facts([
      ["Approval queue", workflow.approvalQueue],
      ["Redrive via", words(workflow.redriveVia)],
      ["Redrive target", workflow.redriveTarget ?? "–"],
      ["Redrive attempts", String(workflow.redriveMaxAttempts)],
    ]),
    wide(h(
      "table",
      { class: "data", "aria-label": "Reasons" },
      h("thead", {}, h("tr", {}, ["Reason", "Owner", "Escalates to", "Due (critical / high / medium / low)", "Allowed"].map((t) => h("th", { text: t })))),
      h(
        "tbody",
        {},
        workflow.reasons.map((r) =>
          h(
            "tr",
            {},
            h("td", {}, h("div", { text: r.label }), h("code", { class: "small muted", text: r.code })),
            h("td", { text: r.ownerRole }),
            h("td", { text: r.escalationOwnerRole }),
            h("td", { text: [r.dueSeconds.critical, r.dueSeconds.high, r.dueSeconds.medium, r.dueSeconds.low].map(duration).join(" / ") }),
            h("td", { class: "small", text: r.allowedActions.map((a) => words(a).toLowerCase()).join(", ") }),
          ),
        ),
      ),
    )),
  );
}

const OPERATOR_MINUTES = { variable: "minutes", label: "Available reviewer minutes per day" };
const APPROVER_MINUTES = { variable: "approverMinutes", label: "Available approver minutes per day" };

const WORKFLOW_PANELS = [
  { id: "now", title: "Now", operation: ops.WORKFLOW_MEASURES, render: renderWorkflowNow, refreshOn: "exceptions" },
  { id: "reasons", title: "Open by reason", operation: ops.WORKFLOW_MEASURES, render: renderAgeByReason, refreshOn: "exceptions", half: true },
  { id: "consequence", title: "Open by consequence", operation: ops.WORKFLOW_MEASURES, render: renderOpenByConsequence, refreshOn: "exceptions", half: true },
  { id: "repeats", title: `Repeats, ${WINDOW}`, operation: ops.WORKFLOW_MEASURES, render: renderRepeats, refreshOn: "exceptions" },
  { id: "outcomes", title: `Redrives and closures, ${WINDOW}`, operation: ops.WORKFLOW_MEASURES, render: renderOutcomes, refreshOn: "exceptions" },
  { id: "times", title: `Hands-on and approval time, ${WINDOW}`, operation: ops.WORKFLOW_MEASURES, render: renderWorkflowTimes, refreshOn: "exceptions" },
  { id: "capacity", title: "Operators' capacity", operation: ops.WORKFLOW_MEASURES, render: renderWorkflowCapacity, refreshOn: "exceptions", input: OPERATOR_MINUTES },
  { id: "approvalCapacity", title: "Approvers' capacity", operation: ops.WORKFLOW_MEASURES, render: renderApprovalCapacity, refreshOn: "exceptions", input: APPROVER_MINUTES },
  { id: "catalogue", title: "Catalogue", operation: ops.WORKFLOWS, render: renderCatalogue },
];

// ---- The page machinery -----------------------------------------------------------------

// Typing settles before a panel reads again: one request per pause, not per keystroke.
const INPUT_SETTLES_MS = 400;

/** A number box in a panel's head; calls `changed(value or null)` once typing settles. */
function panelInput(panelId, { variable, label }, changed) {
  const id = `panel-${panelId}-${variable}`;
  const input = h("input", { id, type: "number", class: "input input-number", min: "0", step: "any", inputmode: "decimal", placeholder: "minutes" });
  let timer = null;
  const settle = () => {
    clearTimeout(timer);
    const text = input.value.trim();
    const value = text === "" ? null : Number(text);
    const valid = !input.validity.badInput && (value === null || (Number.isFinite(value) && value >= 0));
    input.setAttribute("aria-invalid", String(!valid));
    if (valid) changed(value);
  };
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(settle, INPUT_SETTLES_MS);
  });
  input.addEventListener("change", settle);
  return { node: h("div", { class: "panel-control" }, h("label", { for: id, class: "panel-control-label", text: label }), input), stop: () => clearTimeout(timer) };
}

/** Runs a page's panels; returns its disposer. `kind` is "queue" or "workflow". */
function panelPage(main, { kind, name, panels, watch }) {
  const scope = new live.Scope();
  const readAt = h("span", { class: "read-at", "aria-live": "off" });
  const refreshButton = h("button", { type: "button", class: "button" }, "Refresh");
  const grid = h("div", { class: "panels" });
  const page = { name, kind, timers: new Map(), changed: () => {} };
  const runners = [];

  fill(
    main,
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/manage" }, "Manage"), ` / ${kind === "queue" ? "queues" : "workflows"} /`),
        h("h1", { text: name }),
      ),
      h("div", { class: "page-actions" }, readAt, refreshButton),
    ),
    grid,
  );

  // One read per distinct operation, variables and page load: panels sharing both share it.
  let reads = new Map();
  function read(operation, extra) {
    const variables = { name, ...extra };
    const key = JSON.stringify(variables);
    if (!reads.has(operation)) reads.set(operation, new Map());
    const byVariables = reads.get(operation);
    if (!byVariables.has(key)) {
      byVariables.set(key, typeof operation === "function" ? operation(variables) : call(operation, variables));
    }
    return byVariables.get(key);
  }

  for (const panel of panels) {
    const body = h("div", { class: "panel-body" }, panel.live ? null : spinner("Reading"));
    // What the panel's input has set; omitted variables take the operation's defaults.
    const variables = {};
    let generation = 0;
    const run = async () => {
      // A later run (typing, a refresh) wins over an earlier one still on its way.
      const mine = ++generation;
      try {
        const data = await read(panel.operation, variables);
        if (mine === generation) panel.render(body, data, page, variables);
      } catch (error) {
        if (mine === generation) fill(body, errorBox("These figures could not be read.", error.message));
      }
    };
    let control = null;
    if (panel.input) {
      control = panelInput(panel.id, panel.input, (value) => {
        if (value === (variables[panel.input.variable] ?? null)) return;
        if (value === null) delete variables[panel.input.variable];
        else variables[panel.input.variable] = value;
        run();
      });
      scope.add(control.stop);
    }
    grid.append(
      h(
        "section",
        { class: ["card", "panel", panel.half && "panel-half"], "aria-label": panel.title, "data-panel": panel.id },
        h("div", { class: "panel-head" }, h("h2", { class: "card-title", text: panel.title }), control?.node),
        body,
      ),
    );
    if (panel.live) {
      panel.live(body, page, scope);
      continue;
    }
    runners.push({ panel, run });
  }

  async function runAll(filter = () => true) {
    reads = new Map();
    await Promise.all(runners.filter(({ panel }) => filter(panel)).map(({ run }) => run()));
    fill(readAt, `Read at ${clock(new Date())}`);
  }

  page.changed = (what) => {
    clearTimeout(page.timers.get(what));
    page.timers.set(
      what,
      setTimeout(() => runAll((panel) => panel.refreshOn === what), REFRESH_AFTER_MS),
    );
  };
  scope.add(() => page.timers.forEach((timer) => clearTimeout(timer)));
  refreshButton.addEventListener("click", () => runAll());
  scope.onResync(() => runAll());
  if (watch) watch(scope, page);
  runAll();
  return () => scope.dispose();
}

export function queueManagerPage(main, name) {
  return panelPage(main, { kind: "queue", name, panels: QUEUE_PANELS });
}

export function workflowManagerPage(main, name) {
  return panelPage(main, {
    kind: "workflow",
    name,
    panels: WORKFLOW_PANELS,
    watch: (scope, page) => scope.subscribe(ops.EXCEPTION_EVENTS, { workflow: name }, () => page.changed("exceptions")),
  });
}

export function managerHome(main) {
  const body = h("div", {}, spinner("Reading the queues and workflows"));
  fill(
    main,
    h("div", { class: "page-head" }, h("div", {}, h("h1", {}, "Manage"), h("p", { class: "muted" }, "A page per queue and per workflow: the figures now, and how they move while you watch."))),
    body,
  );
  (async () => {
    let data;
    try {
      data = await call(ops.MANAGER_OVERVIEW);
    } catch (error) {
      fill(body, errorBox("The overview could not be read.", error.message));
      return;
    }
    fill(
      body,
      h("h2", { class: "card-title" }, "Queues"),
      h(
        "ul",
        { class: "link-list", "aria-label": "Queues" },
        data.queues.map((q) =>
          // The link is the name alone (its accessible name is what it says); the whole card
          // takes the click (.link-card-target's ::after covers it).
          h(
            "li",
            { class: "link-card" },
            h("a", { class: "link-card-target", href: `#/manage/queue/${encodeURIComponent(q.name)}` }, h("strong", { text: q.name })),
            h("div", { class: "muted small", text: `${count(q.stats.pending)} pending · ${count(q.stats.leased)} leased · oldest ${duration(q.stats.oldestPendingAgeSeconds)}` }),
            q.stats.failedApplications ? badge(`${q.stats.failedApplications} failed applications`, "alert") : null,
          ),
        ),
      ),
      h("h2", { class: "card-title" }, "Workflows"),
      data.workflows.length
        ? h(
            "ul",
            { class: "link-list", "aria-label": "Workflows" },
            data.workflows.map((w) =>
              h(
                "li",
                { class: "link-card" },
                h("a", { class: "link-card-target", href: `#/manage/workflow/${encodeURIComponent(w.name)}` }, h("strong", { text: w.name })),
                h("div", { class: "muted small", text: `approvals in ${w.approvalQueue}` }),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No workflow is configured."),
    );
  })();
}

