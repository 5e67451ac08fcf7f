// A queue's waiting items on its manager page, with checkboxes, and the bulk actions over
// the checked ones: Release, Assign…, Move…, Hold…, each optionally revoking the leases in
// the way. The answer says how many changed and lists, with why, each item skipped.

import { call } from "./api.js";
import { badge, errorBox, fill, h, spinner, wide } from "./dom.js";
import { when } from "./format.js";
import { itemLink } from "./item.js";
import * as ops from "./operations.js";
import { refusalBox } from "./refusals.js";

// Live changes come in bursts (a bulk action is many): read the list again once they settle.
const REREAD_AFTER_MS = 500;

const SKIP_WORDS = {
  LEASED: (skip) => `leased by ${skip.leaseOwner ?? "someone"}: check “Revoke their leases” to take it back`,
  NOT_WAITING: () => "decided: nothing applies to it any more",
  ALREADY_SO: () => "already so: nothing to change",
};

/** A datetime-local input's value for a moment, in the browser's time zone. */
function localInputValue(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** "" -> null, a bad value -> undefined, else the ISO time. */
function isoFrom(input) {
  if (!input.value) return null;
  const moment = new Date(input.value);
  return Number.isNaN(moment.getTime()) ? undefined : moment.toISOString();
}

function where(item) {
  const marks = [];
  if (item.lease) marks.push(badge(`Leased by ${item.lease.owner}`, "warning"));
  if (item.hold) marks.push(badge(`On hold: ${item.hold.reason}`, "info", `Until ${when(item.hold.until)}`));
  if (item.assignment) marks.push(badge(`Assigned to ${item.assignment.reviewer}`, "neutral", item.assignment.until ? `Until ${when(item.assignment.until)}` : "Until unassigned"));
  if (item.overdue) marks.push(badge("Overdue", "alert"));
  if (!marks.length) marks.push(badge("Pending", "info"));
  return marks;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The live panel of a queue's manager page (manager.js panelPage). */
export function startWaitingItems(body, page, scope) {
  const name = page.name;
  let items = [];
  let truncated = false;
  let queues = [];
  let holdReasons = [];
  const checked = new Set();
  let timer = null;
  let busy = false;

  const table = h("div", { class: "waiting-items" }, spinner("Reading the waiting items"));
  const all = h("input", { type: "checkbox", id: `bulk-all-${name}`, "aria-label": "Select all" });
  const chosen = h("span", { class: "muted small bulk-count", "aria-live": "polite" });
  const revoke = h("input", { type: "checkbox", id: `bulk-revoke-${name}`, name: "revokeLeases" });
  const revokeReason = h("input", { id: `bulk-revoke-reason-${name}`, class: "input", type: "text", name: "revocationReason", autocomplete: "off", placeholder: "Why their leases end now" });
  const revokeReasonField = h("div", { class: "bulk-field", hidden: true }, h("label", { for: revokeReason.id, class: "label" }, "Revocation reason"), revokeReason);
  const form = h("div", { class: "bulk-form" });
  const outcome = h("div", { class: "bulk-outcome", "aria-live": "polite" });
  const buttons = {
    release: h("button", { type: "button", class: "button" }, "Release"),
    assign: h("button", { type: "button", class: "button" }, "Assign…"),
    move: h("button", { type: "button", class: "button" }, "Move…"),
    hold: h("button", { type: "button", class: "button" }, "Hold…"),
  };

  function refreshBar() {
    const n = checked.size;
    for (const button of Object.values(buttons)) button.disabled = busy || n === 0;
    fill(chosen, n ? `${plural(n, "item")} checked` : "Check items to act on them");
    all.checked = items.length > 0 && items.every((item) => checked.has(item.id));
    all.indeterminate = n > 0 && !all.checked;
    revokeReasonField.hidden = !revoke.checked;
    for (const submit of form.querySelectorAll("button[data-bulk-submit]")) {
      submit.disabled = busy || n === 0;
      submit.textContent = `${submit.dataset.verb} ${plural(n, "item")}`;
    }
  }

  function render() {
    if (!items.length) {
      fill(table, h("p", { class: "muted" }, "Nothing waits in this queue now."));
      refreshBar();
      return;
    }
    const rows = items.map((item) => {
      const box = h("input", { type: "checkbox", "aria-label": `Select ${item.externalKey}`, checked: checked.has(item.id) });
      box.addEventListener("change", () => {
        if (box.checked) checked.add(item.id);
        else checked.delete(item.id);
        refreshBar();
      });
      return h(
        "tr",
        { "data-item": item.id },
        h("td", {}, box),
        h("td", {}, itemLink(item.id, item.externalKey)),
        h("td", { class: "num" }, String(item.priority)),
        h("td", { class: "marks" }, where(item)),
        h("td", {}, item.dueAt ? when(item.dueAt) : h("span", { class: "muted" }, "–")),
        h("td", {}, when(item.createdAt)),
      );
    });
    fill(
      table,
      wide(h(
        "table",
        { class: "data bulk-table", "aria-label": "Waiting items" },
        h("thead", {}, h("tr", {}, h("th", {}, all), h("th", {}, "Item"), h("th", { class: "num" }, "Priority"), h("th", {}, "Now"), h("th", {}, "Due"), h("th", {}, "Enqueued"))),
        h("tbody", {}, rows),
      )),
      truncated ? h("p", { class: "muted small" }, "The oldest 200 pending and 200 leased items are shown.") : null,
    );
    refreshBar();
  }

  async function read() {
    try {
      const data = await call(ops.QUEUE_WAITING, { name });
      if (!data.queue) {
        fill(table, errorBox(`There is no queue ${name} that your token covers.`));
        return;
      }
      queues = data.queues.map((q) => q.name).filter((q) => q !== name);
      holdReasons = data.queue.holdReasons;
      const { pending, leased } = data.queue;
      items = [...pending.edges, ...leased.edges].map((edge) => edge.node).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || Number(a.id) - Number(b.id));
      truncated = pending.pageInfo.hasNextPage || leased.pageInfo.hasNextPage;
      const present = new Set(items.map((item) => item.id));
      for (const id of [...checked]) if (!present.has(id)) checked.delete(id);
      render();
    } catch (error) {
      fill(table, errorBox("The waiting items could not be read.", error.message));
    }
  }

  function readSoon() {
    clearTimeout(timer);
    timer = setTimeout(read, REREAD_AFTER_MS);
  }

  function field(id, label, input) {
    return h("div", { class: "bulk-field" }, h("label", { for: id, class: "label" }, label), input);
  }

  /** The action's own fields and its submit button ("Hold 3 items"). */
  function open(kind) {
    fill(outcome);
    const submit = h("button", { type: "submit", class: "button button-primary", "data-bulk-submit": "", "data-verb": { assign: "Assign", move: "Move", hold: "Hold" }[kind] });
    const cancel = h("button", { type: "button", class: "button button-quiet" }, "Cancel");
    cancel.addEventListener("click", () => fill(form));
    let fields;
    let collect;
    if (kind === "assign") {
      const reviewer = h("input", { id: `bulk-reviewer-${name}`, class: "input", type: "text", name: "reviewer", autocomplete: "off" });
      const until = h("input", { id: `bulk-assign-until-${name}`, class: "input", type: "datetime-local", name: "assignUntil" });
      fields = [field(reviewer.id, "Reviewer", reviewer), field(until.id, "Assign until", until)];
      collect = () => {
        const moment = isoFrom(until);
        if (moment === undefined) return { refusal: { __typename: "InvalidInput", field: "assign until", message: "Not a time." } };
        return { operation: ops.BULK_ASSIGN, field: "bulkAssign", input: { reviewer: reviewer.value.trim(), until: moment } };
      };
    } else if (kind === "move") {
      const target = h("select", { id: `bulk-to-${name}`, class: "input", name: "toQueue" }, h("option", { value: "" }, "Choose a queue"), queues.map((q) => h("option", { value: q }, q)));
      fields = [field(target.id, "To queue", target)];
      collect = () => ({ operation: ops.BULK_MOVE, field: "bulkMove", input: { toQueue: target.value } });
    } else {
      const reason = h("select", { id: `bulk-hold-reason-${name}`, class: "input", name: "holdReason" }, h("option", { value: "" }, "Choose why they wait"), holdReasons.map((r) => h("option", { value: r.code }, `${r.label} (${r.code})`)));
      const until = h("input", { id: `bulk-hold-until-${name}`, class: "input", type: "datetime-local", name: "holdUntil", value: localInputValue(new Date(Date.now() + 86_400_000)) });
      fields = [field(reason.id, "Hold reason", reason), field(until.id, "Hold until", until)];
      collect = () => {
        const moment = isoFrom(until);
        if (!moment) return { refusal: { __typename: "InvalidInput", field: "hold until", message: "Say until when they wait." } };
        return { operation: ops.BULK_HOLD, field: "bulkHold", input: { reason: reason.value, until: moment }, noRevokeReason: true };
      };
    }
    const actionForm = h("form", { class: "bulk-action", "aria-label": { assign: "Assign", move: "Move", hold: "Hold" }[kind], novalidate: true }, fields, h("div", { class: "control-row" }, cancel, submit));
    actionForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const built = collect();
      if (built.refusal) {
        fill(outcome, refusalBox(built.refusal));
        return;
      }
      apply(built);
    });
    fill(form, actionForm);
    refreshBar();
    actionForm.querySelector("input, select")?.focus();
  }

  async function apply({ operation, field: resultField, input, noRevokeReason = false }) {
    if (busy || !checked.size) return;
    busy = true;
    refreshBar();
    fill(outcome);
    const asked = checked.size;
    const full = { ...input, items: { itemIds: [...checked] }, revokeLeases: revoke.checked };
    if (revoke.checked && !noRevokeReason) full.reason = revokeReason.value.trim() || null;
    try {
      const result = (await call(operation, { input: full }))[resultField];
      if (result.__typename !== "BulkApplied") {
        const named = { reason: "revocation reason", until: "until", toQueue: "to queue" }[result.field];
        fill(outcome, refusalBox(named ? { ...result, field: named } : result));
        return;
      }
      const verb = { bulkRelease: "Released", bulkAssign: "Assigned", bulkMove: "Moved", bulkHold: "Held" }[resultField];
      fill(
        outcome,
        h(
          "div",
          { class: ["notice", result.skipped.length ? "notice-warning" : "notice-success"], role: "status" },
          h("p", { class: "notice-title", text: `${verb} ${result.changed.length} of ${plural(asked, "item")}.` }),
          result.skipped.length
            ? [
                h("p", {}, `Skipped ${result.skipped.length}:`),
                h(
                  "ul",
                  { class: "bulk-skipped", "aria-label": "Skipped items" },
                  result.skipped.map((skip) => h("li", {}, itemLink(skip.item.id, skip.item.externalKey), ` — ${SKIP_WORDS[skip.reason]?.(skip) ?? skip.reason}`)),
                ),
              ]
            : null,
          result.more ? h("p", {}, "More items matched than one call takes: act again for the rest.") : null,
        ),
      );
      for (const changed of result.changed) checked.delete(changed.id);
      fill(form);
      await read();
    } catch (error) {
      fill(outcome, errorBox("The bulk action could not be sent.", `${error.message} Nothing is known to be written; read the list again before retrying.`));
    } finally {
      busy = false;
      refreshBar();
    }
  }

  all.addEventListener("change", () => {
    for (const item of items) {
      if (all.checked) checked.add(item.id);
      else checked.delete(item.id);
    }
    render();
  });
  revoke.addEventListener("change", refreshBar);
  buttons.release.addEventListener("click", () => {
    fill(form);
    apply({ operation: ops.BULK_RELEASE, field: "bulkRelease", input: {} });
  });
  buttons.assign.addEventListener("click", () => open("assign"));
  buttons.move.addEventListener("click", () => open("move"));
  buttons.hold.addEventListener("click", () => open("hold"));

  fill(
    body,
    h(
      "div",
      { class: "bulk-bar", role: "group", "aria-label": "Bulk actions" },
      Object.values(buttons),
      h("label", { class: "bulk-revoke", for: revoke.id }, revoke, " Revoke their leases"),
      chosen,
    ),
    revokeReasonField,
    form,
    outcome,
    table,
  );
  scope.subscribe(ops.QUEUE_BACKLOG, { queue: name }, readSoon);
  scope.add(() => clearTimeout(timer));
  scope.onResync(read);
  read();
}
