// The exceptions workspace: a filtered list, newest activity first and live through
// exceptionEvents, and the exception's own page with its history and the actions its
// state and reason allow.

import { call } from "./api.js";
import { activeClaim, claimNext, leasePanel } from "./claim.js";
import { badge, errorBox, facts, fill, h, readOrSay, spinner, wide } from "./dom.js";
import { count, duration, relative, when, words } from "./format.js";
import * as live from "./live.js";
import * as ops from "./operations.js";
import { renderPayload } from "./payload.js";
import { refusalBox } from "./refusals.js";
import * as session from "./session.js";
import { resumeAfterSignIn, stepUp, welcomeBack } from "./stepup.js";

const STATES = ["NEEDS_REVIEW", "AWAITING_APPROVAL", "REDRIVE_PENDING", "CLOSED"];
const CONSEQUENCE_TONE = { LOW: "neutral", MEDIUM: "info", HIGH: "warning", CRITICAL: "alert" };
const STATE_TONE = { NEEDS_REVIEW: "warning", AWAITING_APPROVAL: "info", REDRIVE_PENDING: "info", CLOSED: "success" };
// Room on the one socket for the other subscriptions of the page.
const MAX_LIVE_WORKFLOWS = 10;
const MAX_PAGES = 5;
// Actions that work under the claim of the exception's item (the lease token fences them).
const UNDER_LEASE = new Set(["ATTACH_EVIDENCE", "SUBMIT_CORRECTION", "APPROVE_CORRECTION", "REJECT_CORRECTION", "CLOSE_EXCEPTION"]);
// Who, by role, takes which action from a console; the integration reports redrive results.
const ROLE_ACTIONS = {
  reviewer: new Set(["ATTACH_EVIDENCE", "SUBMIT_CORRECTION", "CLOSE_EXCEPTION", "REQUEST_REDRIVE", "REOPEN_EXCEPTION"]),
  approver: new Set(["ATTACH_EVIDENCE", "APPROVE_CORRECTION", "REJECT_CORRECTION", "REQUEST_REDRIVE", "REOPEN_EXCEPTION"]),
};

export function stateBadge(state) {
  return badge(words(state), STATE_TONE[state] ?? "neutral");
}

export function consequenceBadge(consequence) {
  return badge(words(consequence), CONSEQUENCE_TONE[consequence] ?? "neutral");
}

function dueText(exception) {
  if (exception.state === "CLOSED") return h("span", { class: "muted", text: `closed ${relative(exception.closedAt)}` });
  return exception.overdue
    ? h("span", {}, badge("Overdue", "alert"), " ", h("span", { class: "muted small", text: `due ${relative(exception.dueAt)}` }))
    : h("span", { title: when(exception.dueAt), text: `due ${relative(exception.dueAt)}` });
}

/** Every exception matching a filter, paged (oldest first, as the API gives them). */
export async function readAllExceptions(operation, filter) {
  const found = [];
  let after = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const { exceptions } = await call(operation, { filter, after });
    found.push(...exceptions.edges.map((edge) => edge.node));
    if (!exceptions.pageInfo.hasNextPage) return { exceptions: found, complete: true };
    after = exceptions.pageInfo.endCursor;
  }
  return { exceptions: found, complete: false };
}

function matches(exception, filter) {
  return (
    (!filter.workflow || exception.workflow === filter.workflow) &&
    (!filter.state || exception.state === filter.state) &&
    (!filter.ownerRole || exception.ownerRole === filter.ownerRole) &&
    (filter.overdue === null || filter.overdue === undefined || exception.overdue === filter.overdue)
  );
}

// ---- The list ---------------------------------------------------------------------------

function parseFilter(query) {
  const params = new URLSearchParams(query || "");
  const overdue = params.get("overdue");
  return {
    workflow: params.get("workflow") || null,
    state: params.get("state") || null,
    ownerRole: params.get("ownerRole") || null,
    overdue: overdue === "true" ? true : overdue === "false" ? false : null,
  };
}

function filterHash(filter) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value !== null && value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text ? `#/exceptions?${text}` : "#/exceptions";
}

function select(id, label, options, value, onChange) {
  const node = h(
    "select",
    { id, class: "input" },
    options.map(([optionValue, text]) => h("option", { value: optionValue }, text)),
  );
  node.value = value ?? "";
  node.addEventListener("change", () => onChange(node.value || null));
  return h("div", {}, h("label", { for: id, class: "label" }, label), node);
}

export function exceptionsPage(main, query) {
  const scope = new live.Scope();
  const filter = parseFilter(query);
  const table = h("div", { class: "table-wrap" }, spinner("Loading exceptions"));
  const filters = h("form", { class: "filters", "aria-label": "Filters", onsubmit: (e) => e.preventDefault() });
  const summary = h("p", { class: "muted", "aria-live": "polite" });
  let rows = [];
  let complete = true;

  fill(
    main,
    h(
      "div",
      { class: "page-head" },
      h("div", {}, h("h1", {}, "Exceptions"), h("p", { class: "muted" }, "Work that stopped and needs a person. Newest activity first; the list updates live.")),
    ),
    filters,
    summary,
    table,
  );

  function setFilter(change) {
    window.location.hash = filterHash({ ...filter, ...change });
  }

  // The rows come newest activity first from the server (order: NEWEST_FIRST); a live
  // change is the newest activity, so its row moves to the top.
  function render(flashId = null) {
    fill(
      summary,
      `${count(rows.length)} exception${rows.length === 1 ? "" : "s"}`,
      complete ? "" : " (the first pages only: narrow the filters to see the rest)",
      rows.length ? ` · ${count(rows.filter((r) => r.overdue && r.state !== "CLOSED").length)} overdue` : "",
    );
    if (!rows.length) {
      fill(table, h("div", { class: "empty" }, h("h2", {}, "No exceptions here"), h("p", { class: "muted" }, "Nothing matches these filters. New ones appear as they are raised.")));
      return;
    }
    fill(
      table,
      wide(h(
        "table",
        { class: "data", "aria-label": "Exceptions" },
        h(
          "thead",
          {},
          h("tr", {}, ["Source record", "Reason", "Consequence", "State", "Owner", "Due", "Last activity"].map((t) => h("th", { scope: "col", text: t }))),
        ),
        h(
          "tbody",
          {},
          rows.map((row) =>
            h(
              "tr",
              { class: row.id === flashId ? "flash" : null, "data-exception": row.id },
              h(
                "td",
                {},
                h("a", { href: `#/exceptions/${row.id}`, text: row.sourceRecordId }),
                h("div", { class: "muted small", text: row.workflow }),
              ),
              h("td", {}, h("div", { text: row.reasonLabel }), h("code", { class: "small muted", text: row.reasonCode })),
              h("td", {}, consequenceBadge(row.consequence)),
              h("td", {}, stateBadge(row.state), row.recurrences ? h("div", { class: "muted small", text: `recurred ${row.recurrences}×` }) : null),
              h("td", {}, h("div", { text: row.ownerRole }), row.owner ? h("div", { class: "muted small", text: `held by ${row.owner}` }) : h("div", { class: "muted small", text: "unclaimed" })),
              h("td", {}, dueText(row)),
              h("td", { title: when(row.updatedAt), text: relative(row.updatedAt) }),
            ),
          ),
        ),
      )),
    );
  }

  async function load() {
    try {
      const apiFilter = { workflow: filter.workflow, state: filter.state, ownerRole: filter.ownerRole, overdue: filter.overdue };
      const result = await readAllExceptions(ops.EXCEPTIONS, apiFilter);
      rows = result.exceptions;
      complete = result.complete;
      render();
    } catch (error) {
      fill(table, errorBox("The exceptions could not be read.", error.message));
    }
  }

  (async () => {
    let workflows = [];
    try {
      workflows = (await call(ops.WORKFLOWS)).workflows;
    } catch (error) {
      fill(table, errorBox("The workflows could not be read.", error.message));
      return;
    }
    const roles = [...new Set(workflows.flatMap((w) => w.reasons.flatMap((r) => [r.ownerRole, r.escalationOwnerRole])))].sort();
    fill(
      filters,
      select("filter-workflow", "Workflow", [["", "All workflows"], ...workflows.map((w) => [w.name, w.name])], filter.workflow, (v) => setFilter({ workflow: v })),
      select("filter-state", "State", [["", "Any state"], ...STATES.map((s) => [s, words(s)])], filter.state, (v) => setFilter({ state: v })),
      select(
        "filter-overdue",
        "Overdue",
        [["", "Overdue or not"], ["true", "Overdue only"], ["false", "Not overdue"]],
        filter.overdue === null ? "" : String(filter.overdue),
        (v) => setFilter({ overdue: v === null ? null : v === "true" }),
      ),
      select("filter-owner", "Owner role", [["", "Any owner"], ...roles.map((r) => [r, r])], filter.ownerRole, (v) => setFilter({ ownerRole: v })),
    );
    const watched = (filter.workflow ? workflows.filter((w) => w.name === filter.workflow) : workflows).slice(0, MAX_LIVE_WORKFLOWS);
    for (const workflow of watched) {
      scope.subscribe(ops.EXCEPTION_EVENTS, { workflow: workflow.name }, (data) => {
        const event = data.exceptionEvents;
        const exception = event.exception;
        rows = rows.filter((row) => row.id !== exception.id);
        if (matches(exception, filter)) rows.unshift(exception);
        render(exception.id);
      });
    }
    scope.onResync(load);
    await load();
  })();

  return () => scope.dispose();
}

// ---- One exception ----------------------------------------------------------------------

function steps(exception) {
  const stale = new Set(exception.staleSteps);
  const items = exception.completedSteps.map((step) =>
    h("li", { class: ["step", stale.has(step) ? "step-stale" : "step-done"] }, stale.has(step) ? "↻ " : "✓ ", words(step)),
  );
  if (exception.blockedStep) {
    items.push(h("li", { class: "step step-blocked" }, "✕ ", words(exception.blockedStep)));
  }
  return h("ol", { class: "steps", "aria-label": "Steps" }, items);
}

function historyTimeline(events) {
  return h(
    "ol",
    { class: "timeline", "aria-label": "History" },
    [...events].reverse().map((event) =>
      h(
        "li",
        { class: "timeline-entry" },
        h(
          "div",
          { class: "timeline-head" },
          h("strong", { text: words(event.kind) }),
          event.version ? badge(`v${event.version}`, "neutral") : null,
          event.fromState && event.fromState !== event.toState
            ? h("span", { class: "muted small", text: `${words(event.fromState)} → ${words(event.toState)}` })
            : null,
        ),
        h("div", { class: "timeline-meta", text: `${event.actor} (${event.actorRole}) · ${when(event.at)}` }),
        event.detail ? h("p", { class: "timeline-note", text: event.detail }) : null,
        event.redriveKey ? h("p", { class: "timeline-meta" }, "Redrive key ", h("code", { text: event.redriveKey })) : null,
        event.evidence.length ? h("ul", { class: "refs" }, event.evidence.map((ref) => h("li", { text: ref }))) : null,
      ),
    ),
  );
}

function correctionsList(exception) {
  if (!exception.corrections.length) return h("p", { class: "muted" }, "No correction yet.");
  return [...exception.corrections].reverse().map((c) =>
    h(
      "section",
      { class: "correction", "aria-label": `Correction v${c.version}` },
      h(
        "div",
        { class: "timeline-head" },
        h("strong", { text: `Version ${c.version}` }),
        c.version === exception.version ? badge("Current", "info") : badge("Earlier", "neutral"),
        h("span", { class: "muted small", text: `by ${c.correctedBy} · ${when(c.submittedAt)}` }),
      ),
      renderPayload(c.changes, { label: `Changes of version ${c.version}` }),
      c.staleSteps.length ? h("p", { class: "small" }, "Runs again: ", c.staleSteps.map(words).join(", ")) : null,
      c.evidence.length ? h("ul", { class: "refs" }, c.evidence.map((ref) => h("li", { text: ref }))) : null,
      c.note ? h("p", { class: "timeline-note", text: c.note }) : null,
    ),
  );
}

function redriveStatus(redrive) {
  if (redrive.succeeded === true) return badge("Succeeded", "success");
  if (redrive.succeeded === false) return badge("Failed", "alert");
  if (redrive.deliveryState === "failed") return badge("Undeliverable", "alert");
  if (redrive.deliveryState === "delivered") return badge("Delivered, waiting for the result", "info");
  return badge("Waiting for the owning system", "info");
}

function redrivesList(exception) {
  if (!exception.redrives.length) return h("p", { class: "muted" }, "No redrive requested.");
  return wide(h(
    "table",
    { class: "data", "aria-label": "Redrives" },
    h("thead", {}, h("tr", {}, ["Key", "Status", "Resumes after", "Requested"].map((t) => h("th", { scope: "col", text: t })))),
    h(
      "tbody",
      {},
      [...exception.redrives].reverse().map((r) =>
        h(
          "tr",
          { "data-redrive": r.key },
          h("td", {}, h("code", { text: r.key })),
          h("td", {}, redriveStatus(r), r.resultDetail ? h("div", { class: "muted small", text: r.resultDetail }) : null),
          h("td", { text: r.resumeAfter ? words(r.resumeAfter) : "the start" }),
          h("td", { class: "small", text: `${r.requestedBy} · ${when(r.requestedAt)}` }),
        ),
      ),
    ),
  ));
}

function summaryCard(exception) {
  return h(
    "section",
    { class: "card", "aria-label": "What stopped" },
    h("h2", { class: "card-title" }, "What stopped"),
    h("h3", { class: "reason-title", text: exception.reasonLabel }),
    h("p", { class: "detail-text", text: exception.detail }),
    h("h3", { class: "card-title" }, "Steps"),
    steps(exception),
    facts([
      ["Source record", h("code", { text: exception.sourceRecordId })],
      ["Reason code", h("code", { text: exception.reasonCode })],
      ["Consequence", consequenceBadge(exception.consequence)],
      ["Due", h("span", {}, when(exception.dueAt), " ", dueText(exception)), { "data-fact": "due" }],
      ["Owner", exception.ownerRole + (exception.owner ? ` · held by ${exception.owner}` : ""), { "data-fact": "owner" }],
      ["Escalates to", exception.escalationOwnerRole + (exception.escalatedAt ? ` (escalated ${relative(exception.escalatedAt)})` : "")],
      ["Attempts", String(exception.attempts)],
      ["Recurrences", String(exception.recurrences)],
      ["Reopened", String(exception.reopenCount)],
      ["Raised", when(exception.createdAt)],
    ]),
    exception.lastRejection
      ? h("div", { class: "notice notice-warning" }, h("p", { class: "notice-title" }, "The last correction was rejected"), h("p", { text: exception.lastRejection }))
      : null,
    h("h3", { class: "card-title" }, "Evidence"),
    exception.evidence.length ? h("ul", { class: "refs", "aria-label": "Evidence references" }, exception.evidence.map((ref) => h("li", { text: ref }))) : h("p", { class: "muted" }, "None yet."),
    h("h3", { class: "card-title" }, "Context"),
    renderPayload(exception.context, { label: "Context" }),
  );
}

function lines(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

/** A value typed in a form: JSON where it reads as JSON (numbers, true, {…}), else text. */
function typedValue(text) {
  const trimmed = text.trim();
  if (/^(-?\d|true$|false$|null$|[[{"])/.test(trimmed)) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // Not JSON after all: the text itself.
    }
  }
  return text;
}

function outcomeBox(result, success) {
  if (success) return h("div", { class: "notice notice-success", role: "status" }, h("p", { class: "notice-title", text: success }));
  return refusalBox(result);
}

export function exceptionPage(main, id) {
  const scope = new live.Scope();
  const left = h("div", { class: "exception-main" }, spinner("Loading the exception"));
  const right = h("aside", { class: "exception-side" });
  const head = h("div", { class: "page-head" });
  const outcome = h("div", { "aria-live": "polite" });
  let exception = null;
  let actionsKey = null;
  let panel = null;

  fill(main, head, h("div", { class: "exception-layout" }, left, right));

  function holding() {
    const claim = activeClaim();
    return claim?.held && exception && claim.itemId === exception.item.id ? claim : null;
  }

  async function act(operation, field, input, { success, endsLease }) {
    const claim = holding();
    if (claim && endsLease) claim.settling = true;
    fill(outcome);
    try {
      const result = (await call(operation, { input }))[field];
      const ok = ["ExceptionUpdated", "RedriveQueued", "AlreadyQueued"].includes(result.__typename);
      if (ok && claim && endsLease) claim.end("acted");
      if (result.__typename === "StaleLease" && claim) claim.lose("The lease had ended: the action was not taken.");
      const text = typeof success === "function" ? success(result) : success;
      if (result.__typename === "ReauthenticationRequired") {
        stepUp(outcome, result, { itemId: exception.item.id, draft: { note: input.note ?? "" }, where: "workflow" });
        return result;
      }
      fill(outcome, outcomeBox(result, ok ? text : null));
      await reload();
      return result;
    } catch (error) {
      fill(outcome, errorBox("The action could not be sent.", error.message));
      return null;
    } finally {
      if (claim) claim.settling = false;
    }
  }

  function button(text, onClick, { primary = false, disabled = false } = {}) {
    const node = h("button", { type: "button", class: ["button", primary && "button-primary"], disabled }, text);
    node.addEventListener("click", async () => {
      node.disabled = true;
      try {
        await onClick();
      } finally {
        node.disabled = false;
      }
    });
    return node;
  }

  function field(id, label, control) {
    control.id = id;
    return [h("label", { for: id, class: "label" }, label), control];
  }

  function correctionForm(leaseToken) {
    const rows = h("div", { class: "changes" });
    const context = exception.context && typeof exception.context === "object" ? exception.context : {};
    let n = 0;
    function addRow(name = "", placeholder = "") {
      n += 1;
      const remove = h("button", { type: "button", class: "button button-quiet", "aria-label": `Remove field ${n}` }, "✕");
      const row = h(
        "div",
        { class: "change-row" },
        h("input", { class: "input", "aria-label": `Field ${n}`, value: name, placeholder: "field" }),
        h("input", { class: "input", "aria-label": `Value ${n}`, placeholder: placeholder || "new value" }),
        remove,
      );
      remove.addEventListener("click", () => row.remove());
      rows.append(row);
    }
    const keys = Object.keys(context);
    if (keys.length) for (const key of keys) addRow(key, `now: ${JSON.stringify(context[key])}`);
    else addRow();
    const evidence = h("textarea", { class: "input", rows: 2, placeholder: "docstore://… one reference per line" });
    const note = h("textarea", { class: "input", rows: 2 });
    const stale = exception.completedSteps.map((step) => {
      const box = h("input", { type: "checkbox", value: step });
      return { box, node: h("label", {}, box, " ", words(step)) };
    });
    return h(
      "div",
      { class: "action", "aria-label": "Submit a correction", role: "group" },
      h("h4", {}, "Submit a correction"),
      h("p", { class: "hint" }, "The fields to change and their new values. Numbers, true/false and {…} are read as JSON."),
      rows,
      h("button", { type: "button", class: "button button-quiet", onclick: () => addRow() }, "+ Add a field"),
      ...field("correction-evidence", "Evidence references", evidence),
      stale.length ? h("fieldset", { class: "checks" }, h("legend", { class: "label" }, "Steps to run again"), stale.map((s) => s.node)) : null,
      ...field("correction-note", "Note for the approver", note),
      button(
        "Submit correction",
        () => {
          const changes = {};
          for (const row of rows.querySelectorAll(".change-row")) {
            const [name, value] = row.querySelectorAll("input");
            if (name.value.trim() && value.value !== "") changes[name.value.trim()] = typedValue(value.value);
          }
          if (!Object.keys(changes).length) {
            fill(outcome, errorBox("Give at least one field a new value.", "A correction says what changes."));
            return null;
          }
          const refs = lines(evidence.value);
          if (!refs.length) {
            fill(outcome, errorBox("Add at least one evidence reference.", "The approver needs to see what the correction rests on."));
            return null;
          }
          return act(
            ops.SUBMIT_CORRECTION,
            "submitCorrection",
            {
              exceptionId: exception.id,
              leaseToken,
              reasonCode: exception.reasonCode,
              changes,
              evidence: refs,
              staleSteps: stale.filter((s) => s.box.checked).map((s) => s.box.value),
              note: note.value.trim() || null,
            },
            { success: "Correction submitted: it waits for an approver.", endsLease: true },
          );
        },
        { primary: true },
      ),
    );
  }

  function actionForms(allowed, leaseToken) {
    const forms = [];
    const id = exception.id;
    if (allowed.has("APPROVE_CORRECTION")) {
      const current = exception.corrections.find((c) => c.version === exception.version);
      const note = h("textarea", { class: "input", rows: 2 });
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Approve the correction" },
          h("h4", {}, `Approve version ${exception.version}`),
          current ? h("p", { class: "hint", text: `Submitted by ${current.correctedBy}. Read its changes on the left.` }) : null,
          ...field("approve-note", "Approval note", note),
          button(
            "Approve correction",
            () =>
              act(
                ops.APPROVE_CORRECTION,
                "approveCorrection",
                { exceptionId: id, leaseToken, version: exception.version, note: note.value.trim() || null },
                { success: "Approved: the correction can be redriven.", endsLease: true },
              ),
            { primary: true },
          ),
        ),
      );
    }
    if (allowed.has("REJECT_CORRECTION")) {
      const reason = h("input", { class: "input", placeholder: "What must change" });
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Reject the correction" },
          h("h4", {}, "Reject the correction"),
          ...field("reject-reason", "Why it is rejected", reason),
          button("Reject correction", () => {
            if (!reason.value.trim()) return fill(outcome, errorBox("Say why it is rejected.", "Whoever corrects next reads it."));
            return act(ops.REJECT_CORRECTION, "rejectCorrection", { exceptionId: id, leaseToken, reason: reason.value.trim() }, { success: "Rejected: it goes back to its owner.", endsLease: true });
          }),
        ),
      );
    }
    if (allowed.has("SUBMIT_CORRECTION")) forms.push(correctionForm(leaseToken));
    if (allowed.has("ATTACH_EVIDENCE")) {
      const refs = h("textarea", { class: "input", rows: 2, placeholder: "one reference per line" });
      const note = h("input", { class: "input" });
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Attach evidence" },
          h("h4", {}, "Attach evidence"),
          ...field("attach-refs", "References to attach", refs),
          ...field("attach-note", "Note about the evidence", note),
          button("Attach evidence", () => {
            const evidence = lines(refs.value);
            if (!evidence.length) return fill(outcome, errorBox("Add at least one reference.", "References, never documents: a URI or a document id."));
            return act(ops.ATTACH_EVIDENCE, "attachEvidence", { exceptionId: id, leaseToken, evidence, note: note.value.trim() || null }, { success: "Evidence attached.", endsLease: false });
          }),
        ),
      );
    }
    if (allowed.has("CLOSE_EXCEPTION")) {
      const closure = h("select", { class: "input" }, ["REJECTED", "DUPLICATE", "OBSOLETE"].map((c) => h("option", { value: c }, words(c))));
      const note = h("input", { class: "input" });
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Close without a correction" },
          h("h4", {}, "Close without a correction"),
          ...field("close-closure", "Closure", closure),
          ...field("close-note", "Why it closes", note),
          button("Close exception", () =>
            act(ops.CLOSE_EXCEPTION, "closeException", { exceptionId: id, leaseToken, closure: closure.value, note: note.value.trim() || null }, { success: "Closed.", endsLease: true }),
          ),
        ),
      );
    }
    if (allowed.has("REQUEST_REDRIVE")) {
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Request the redrive" },
          h("h4", {}, `Redrive version ${exception.version}`),
          h("p", { class: "hint" }, "Sends the approved correction back into the workflow, once; the owning system reports the result."),
          button(
            "Request redrive",
            () =>
              act(ops.REQUEST_REDRIVE, "requestRedrive", { exceptionId: id, version: exception.version }, {
                success: (result) => `Redrive requested. Key: ${result.redriveKey}`,
                endsLease: false,
              }),
            { primary: true },
          ),
        ),
      );
    }
    if (allowed.has("REOPEN_EXCEPTION")) {
      const reason = h("input", { class: "input" });
      forms.push(
        h(
          "div",
          { class: "action", role: "group", "aria-label": "Reopen" },
          h("h4", {}, "Reopen"),
          ...field("reopen-reason", "Why it is reopened", reason),
          button("Reopen exception", () => {
            if (!reason.value.trim()) return fill(outcome, errorBox("Say why it is reopened.", "The history keeps it."));
            return act(ops.REOPEN_EXCEPTION, "reopenException", { exceptionId: id, reason: reason.value.trim() }, { success: "Reopened: it needs review again.", endsLease: false });
          }),
        ),
      );
    }
    return forms;
  }

  function renderActions() {
    const me = session.current();
    const claim = holding();
    const roleActions = ROLE_ACTIONS[me.role] ?? new Set();
    const allowed = exception.allowedActions.filter((a) => roleActions.has(a));
    const needLease = allowed.filter((a) => UNDER_LEASE.has(a));
    const free = allowed.filter((a) => !UNDER_LEASE.has(a));
    if (panel) panel.dispose();
    panel = claim ? leasePanel(claim, { onEnded: () => renderActions() }) : null;
    const parts = [];
    if (!allowed.length) {
      parts.push(
        h(
          "p",
          { class: "muted" },
          exception.state === "REDRIVE_PENDING"
            ? "Waiting for the owning system to report the redrive's result."
            : roleActions.size
              ? "Nothing for you to do here in this state."
              : `Read only: a ${me.role} token does not act on exceptions.`,
        ),
      );
    }
    if (needLease.length && !claim) {
      const queue = exception.item.queue;
      const note = exception.owner && exception.owner !== me.user ? `${exception.owner} holds it under a lease now.` : `Its work is claimed through queue ${queue}.`;
      const claimButton = button(`Claim next in ${queue}`, async () => {
        const { claim: claimed, refusal } = await claimNext(queue);
        if (refusal) {
          fill(outcome, outcomeBox(refusal));
          return;
        }
        const otherId = claimed.item.exception?.id;
        if (otherId && otherId !== exception.id) window.location.hash = `#/exceptions/${otherId}`;
        else await reload({ actions: true });
      });
      parts.push(h("div", { class: "notice notice-info" }, h("p", { class: "notice-title" }, "Claim it to act on it"), h("p", { text: `${note} Claiming gives you the most urgent one there.` }), claimButton));
    }
    const forms = actionForms(new Set(claim ? allowed : free), claim?.token ?? null);
    fill(
      right,
      h(
        "section",
        { class: "card", "aria-label": "Actions" },
        h("h3", { class: "card-title" }, "Actions"),
        panel,
        parts,
        forms,
        outcome,
      ),
    );
  }

  function renderAll() {
    fill(
      head,
      h(
        "div",
        {},
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/exceptions" }, "Exceptions"), ` / ${exception.workflow} /`),
        h("h1", {}, exception.sourceRecordId, " ", stateBadge(exception.state), " ", exception.overdue && exception.state !== "CLOSED" ? badge("Overdue", "alert") : null),
        h("p", { class: "muted small" }, h("code", { text: exception.id }), ` · updated ${relative(exception.updatedAt)}`),
      ),
    );
    fill(
      left,
      summaryCard(exception),
      h("section", { class: "card", "aria-label": "Corrections" }, h("h3", { class: "card-title" }, "Corrections"), correctionsList(exception)),
      h("section", { class: "card", "aria-label": "Redrives" }, h("h3", { class: "card-title" }, "Redrives"), redrivesList(exception)),
      h("section", { class: "card", "aria-label": "History" }, h("h3", { class: "card-title" }, `History (${exception.events.length} event${exception.events.length === 1 ? "" : "s"})`), historyTimeline(exception.events)),
    );
  }

  async function reload({ actions = false } = {}) {
    const found = await readOrSay(left, async () => (await call(ops.EXCEPTION, { id })).exception, "The exception could not be read.", [
      `There is no exception ${id} that your token covers.`,
      "It may belong to a workflow outside your queues.",
    ]);
    if (!found) return;
    const first = exception === null;
    // Back from signing in again to approve (stepup.js): the lease is taken up again.
    const draft = first && found.item ? await resumeAfterSignIn(found.item.id) : null;
    exception = found;
    renderAll();
    // The forms are rebuilt only when what they act on changed: typing is never lost to
    // someone else's event.
    const key = JSON.stringify([found.state, found.version, found.allowedActions, found.owner, holding()?.itemId]);
    if (first || actions || key !== actionsKey) {
      actionsKey = key;
      renderActions();
    }
    if (draft) {
      const note = right.querySelector("#approve-note");
      if (note && draft.note) note.value = draft.note;
      fill(outcome, welcomeBack(Boolean(draft.note)));
    }
    if (first) {
      scope.subscribe(ops.EXCEPTION_EVENTS, { workflow: found.workflow }, (data) => {
        if (data.exceptionEvents.exceptionId === id) reload();
      });
    }
  }

  scope.onResync(() => reload());
  reload();
  return () => {
    scope.dispose();
    if (panel) panel.dispose();
  };
}
