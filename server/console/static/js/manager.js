// The manager's pages: one per queue and one per workflow, each a list of panels.
//
// A panel is one fixed operation (operations.js), the variables it takes from the page, and
// one render function; a live panel starts subscriptions instead. The page runs every
// panel's operation, renders each into its own card, and runs again those whose
// `refreshOn` names a live change it saw. Adding a figure set is one operation, one render
// function and one entry in QUEUE_PANELS or WORKFLOW_PANELS.

import { call } from "./api.js";
import { bars, liveTimeSeries } from "./charts.js";
import { badge, errorBox, facts, figure, fill, h, spinner } from "./dom.js";
import { clock, count, duration, words } from "./format.js";
import { readAllExceptions } from "./exceptions.js";
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
    ]),
  );
}

function renderReasonCodes(body, data) {
  const codes = data.queue.reasonCodes;
  fill(
    body,
    codes.length
      ? h(
          "table",
          { class: "data", "aria-label": "Reason codes" },
          h("thead", {}, h("tr", {}, h("th", {}, "Code"), h("th", {}, "Label"), h("th", {}, "Verdicts"))),
          h(
            "tbody",
            {},
            codes.map((c) =>
              h("tr", {}, h("td", {}, h("code", { text: c.code })), h("td", { text: c.label }), h("td", {}, c.verdicts.map((v) => badge(words(v), v.toLowerCase())))),
            ),
          ),
        )
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
    fill(note, `${chart.points()} points · last change ${clock(new Date(lastAt))}${last.resync ? " (fresh snapshot after a reconnect)" : ""}`);
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

const QUEUE_PANELS = [
  { id: "now", title: "Now", operation: ops.QUEUE_STATS, render: renderQueueNow, refreshOn: "backlog" },
  { id: "backlog", title: "Backlog since this page opened", live: startBacklogChart },
  { id: "settings", title: "Settings", operation: ops.QUEUE_SETTINGS, render: renderQueueSettings, half: true },
  { id: "reasons", title: "Reason codes", operation: ops.QUEUE_SETTINGS, render: renderReasonCodes, half: true },
  // Queue.measures: the lease-count histogram, reason mix, handling percentiles, TTL
  // advice, capacity (with the reviewer minutes input) and reviewer rows go here.
];

// ---- Panels of a workflow ---------------------------------------------------------------

const OPEN = (e) => e.state !== "CLOSED";

function renderWorkflowNow(body, data, page) {
  const all = data.exceptions;
  const open = all.filter(OPEN);
  const byState = (state) => open.filter((e) => e.state === state).length;
  const oldest = open.length ? Math.max(...open.map((e) => (Date.now() - Date.parse(e.createdAt)) / 1000)) : null;
  const overdue = open.filter((e) => e.overdue).length;
  const unclaimed = open.filter((e) => e.state === "NEEDS_REVIEW" && !e.owner).length;
  fill(
    body,
    h(
      "dl",
      { class: "figures" },
      figure("Open", count(open.length), { figureId: "open" }),
      figure("Needs review", count(byState("NEEDS_REVIEW")), { figureId: "needsReview" }),
      figure("Awaiting approval", count(byState("AWAITING_APPROVAL")), { figureId: "awaitingApproval" }),
      figure("Redrive pending", count(byState("REDRIVE_PENDING")), { figureId: "redrivePending" }),
      figure("Overdue", count(overdue), { figureId: "overdue", tone: overdue ? "alert" : null }),
      figure("Unclaimed", count(unclaimed), { figureId: "unclaimed", note: "needs review, nobody holds it" }),
      figure("Oldest open", duration(oldest), { figureId: "oldestOpen" }),
      figure("Closed", count(all.length - open.length), { figureId: "closed" }),
    ),
    data.complete ? null : h("p", { class: "hint" }, "Counted over the first pages of exceptions only."),
  );
  page.exceptions = all;
}

function renderOpenByReason(body, data) {
  const open = data.exceptions.filter(OPEN);
  const groups = new Map();
  for (const e of open) {
    const group = groups.get(e.reasonCode) ?? { label: e.reasonLabel, code: e.reasonCode, open: 0, overdue: 0, oldest: 0 };
    group.open += 1;
    group.overdue += e.overdue ? 1 : 0;
    group.oldest = Math.max(group.oldest, (Date.now() - Date.parse(e.createdAt)) / 1000);
    groups.set(e.reasonCode, group);
  }
  const rows = [...groups.values()].sort((a, b) => b.open - a.open);
  fill(
    body,
    rows.length
      ? [
          bars(rows.map((r) => ({ label: r.label, value: r.open, note: r.code })), { label: "Open exceptions by reason" }),
          h(
            "table",
            { class: "data", "aria-label": "Open by reason" },
            h("thead", {}, h("tr", {}, h("th", {}, "Reason"), h("th", { class: "num" }, "Open"), h("th", { class: "num" }, "Overdue"), h("th", { class: "num" }, "Oldest"))),
            h(
              "tbody",
              {},
              rows.map((r) =>
                h("tr", {}, h("td", {}, h("code", { text: r.code })), h("td", { class: "num", text: count(r.open) }), h("td", { class: "num", text: count(r.overdue) }), h("td", { class: "num", text: duration(r.oldest) })),
              ),
            ),
          ),
        ]
      : h("p", { class: "muted" }, "Nothing open."),
  );
}

function renderOpenByConsequence(body, data) {
  const open = data.exceptions.filter(OPEN);
  const rows = ["CRITICAL", "HIGH", "MEDIUM", "LOW"].map((c) => ({ label: words(c), value: open.filter((e) => e.consequence === c).length }));
  fill(body, bars(rows, { label: "Open exceptions by consequence" }));
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
    h(
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
    ),
  );
}

async function workflowExceptions(variables) {
  return readAllExceptions(ops.WORKFLOW_EXCEPTIONS, { workflow: variables.name });
}

const WORKFLOW_PANELS = [
  { id: "now", title: "Now", operation: workflowExceptions, render: renderWorkflowNow, refreshOn: "exceptions" },
  { id: "reasons", title: "Open by reason", operation: workflowExceptions, render: renderOpenByReason, refreshOn: "exceptions", half: true },
  { id: "consequence", title: "Open by consequence", operation: workflowExceptions, render: renderOpenByConsequence, refreshOn: "exceptions", half: true },
  { id: "catalogue", title: "Catalogue", operation: ops.WORKFLOWS, render: renderCatalogue },
  // Workflow.measures: exception health (unclaimed new and overdue, age by reason, repeats,
  // redrive success, closures, reopens, approval and handling times) goes here.
];

// ---- The page machinery -----------------------------------------------------------------

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

  // One read per distinct operation and page load: panels sharing an operation share it.
  let reads = new Map();
  function read(operation) {
    if (!reads.has(operation)) {
      const variables = { name };
      reads.set(operation, typeof operation === "function" ? operation(variables) : call(operation, variables));
    }
    return reads.get(operation);
  }

  for (const panel of panels) {
    const body = h("div", { class: "panel-body" }, panel.live ? null : spinner("Reading"));
    grid.append(
      h(
        "section",
        { class: ["card", "panel", panel.half && "panel-half"], "aria-label": panel.title, "data-panel": panel.id },
        h("div", { class: "panel-head" }, h("h2", { class: "card-title", text: panel.title })),
        body,
      ),
    );
    if (panel.live) {
      panel.live(body, page, scope);
      continue;
    }
    const run = async () => {
      try {
        panel.render(body, await read(panel.operation), page);
      } catch (error) {
        fill(body, errorBox("These figures could not be read.", error.message));
      }
    };
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
          h(
            "li",
            {},
            h(
              "a",
              { class: "link-card", href: `#/manage/queue/${encodeURIComponent(q.name)}`, "aria-label": q.name },
              h("strong", { text: q.name }),
              h("div", { class: "muted small", text: `${count(q.stats.pending)} pending · ${count(q.stats.leased)} leased · oldest ${duration(q.stats.oldestPendingAgeSeconds)}` }),
              q.stats.failedApplications ? badge(`${q.stats.failedApplications} failed applications`, "alert") : null,
            ),
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
                {},
                h("a", { class: "link-card", href: `#/manage/workflow/${encodeURIComponent(w.name)}`, "aria-label": w.name }, h("strong", { text: w.name }), h("div", { class: "muted small", text: `approvals in ${w.approvalQueue}` })),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No workflow is configured."),
    );
  })();
}

