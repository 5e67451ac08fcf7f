// The work of a second pair of eyes (issue 16), under a claim like any other:
//
// - a second review: the item carries a provisional decision (`awaitingSecondReview`) made
//   by someone else; the reviewer reads it whole and confirms it, or overrides it with a
//   verdict and a reason of the original queue's catalogue;
// - a QA check: a copy of an item whose decision was sampled (`qaOf`); the reviewer records
//   whether they agree, with a reason of the QA queue's catalogue.
//
// Neither offers Approve/Reject/Escalate. The lease panel, the Activity and lost leases work
// as for any claim (claim.js); every refusal is explained in words (refusals.js).

import { call } from "./api.js";
import { activityPanel } from "./activity.js";
import { leasePanel } from "./claim.js";
import { decisionSummary, reasonCatalogue, reasonText } from "./decisions.js";
import { errorBox, fill, h, refusalNotice } from "./dom.js";
import { verdictDone, verdictWord } from "./format.js";
import { itemCard } from "./item.js";
import * as ops from "./operations.js";
import { CONTEXTS, explain } from "./refusals.js";
import { stepUp, welcomeBack } from "./stepup.js";

// An override approves or rejects; an escalation is not a second reviewer's to make.
const OVERRIDE_VERDICTS = ["APPROVE", "REJECT"];

/** Nothing is sent: the field that must change is marked, said and focused. */
function holdBack(outcome, field, notice) {
  field.setAttribute("aria-invalid", "true");
  fill(outcome, refusalNotice(notice));
  field.focus();
}

function doneNotice(title, ...rest) {
  return h(
    "div",
    { class: "notice notice-success", role: "status" },
    h("p", { class: "notice-title", text: title }),
    h("p", {}, ...rest, " Press ", h("kbd", {}, "n"), " for the next item."),
  );
}

/** A reason select with its label, filled with `codes` ({code, label}). */
function reasonField(id, label, placeholder) {
  const select = h("select", { id, class: "input", name: id });
  return {
    select,
    nodes: [h("label", { for: id, class: "label" }, label), select],
    fill(codes) {
      const keep = select.value;
      fill(select, h("option", { value: "" }, placeholder), codes.map((r) => h("option", { value: r.code }, `${r.label} (${r.code})`)));
      select.value = codes.some((r) => r.code === keep) ? keep : codes.length === 1 ? codes[0].code : "";
    },
  };
}

/** Runs one mutation of a check and settles the claim around it; `onResult` says what the
 *  answer means and returns whether the work is done. */
async function sendCheck(claim, { operation, field, input, context, outcome, onResult, onSettled, busy, draft = {} }) {
  if (!claim.held) return;
  busy(true);
  claim.settling = true;
  fill(outcome);
  let done = false;
  try {
    const result = (await call(operation, { input }))[field];
    done = onResult(result);
    if (result.__typename === "ReauthenticationRequired") stepUp(outcome, result, { itemId: claim.itemId, draft });
    else if (!done) {
      const words = explain(result, context);
      if (result.__typename === "StaleLease") claim.lose(words.title);
      fill(outcome, refusalNotice(words));
    }
  } catch (error) {
    fill(outcome, errorBox("It could not be sent.", `${error.message} Nothing is known to be recorded; try again while the lease lasts.`));
  } finally {
    claim.settling = false;
    busy(false);
    onSettled({ decided: done });
  }
}

function workspace(claim, { summary, side, onSettled }) {
  const panel = leasePanel(claim, { onEnded: () => onSettled() });
  const activity = activityPanel(claim.itemId, { queue: claim.queue });
  const node = h(
    "div",
    { class: "work" },
    h("div", { class: "work-main" }, summary, itemCard(claim.item, claim.evidenceHash), activity.node),
    h("aside", { class: "work-side" }, side(panel)),
  );
  return {
    node,
    dispose() {
      panel.dispose();
      activity.dispose();
    },
  };
}

// ---- Second review ----------------------------------------------------------------------

/** A claimed item awaiting second review: the first decision, Confirm and Override. */
export function secondReviewWorkspace(claim, queue, { onSettled }) {
  const first = claim.item.awaitingSecondReview;
  let sending = false;
  let catalogue = [];
  const labels = new Map();

  const summarySlot = h("div", { class: "decision-summary-slot" });
  const showSummary = () =>
    fill(summarySlot, decisionSummary(first, { labels, currentHash: claim.evidenceHash, title: "First decision" }));
  showSummary();

  const confirm = h("button", { type: "button", class: "button button-primary button-wide" }, "Confirm decision");
  const verdict = h("select", { id: "override-verdict", class: "input", name: "overrideVerdict" });
  const reason = reasonField("override-reason", "Override reason", "Choose a reason");
  const note = h("textarea", { id: "override-note", class: "input", rows: 3, maxlength: 4000, placeholder: "Why the first decision does not stand" });
  const override = h("button", { type: "submit", class: "button button-danger" }, "Override decision");
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });

  function validFor(v) {
    return catalogue.filter((r) => r.verdicts.includes(v));
  }

  function fillVerdicts() {
    const offered = OVERRIDE_VERDICTS.filter((v) => validFor(v).length);
    fill(verdict, h("option", { value: "" }, "Choose the verdict that stands"), offered.map((v) => h("option", { value: v }, verdictWord(v))));
  }

  function refresh() {
    const usable = claim.held && !sending;
    confirm.disabled = !usable;
    verdict.disabled = !usable;
    reason.select.disabled = !usable || !verdict.value;
    note.disabled = !usable;
    override.disabled = !usable;
  }

  verdict.addEventListener("change", () => {
    reason.fill(validFor(verdict.value));
    refresh();
  });

  // The reasons of the queue the first decision was made in: an override is judged there.
  // Back from signing in again (stepup.js): the override as it was, once the reasons are in.
  let draft = null;
  const catalogueRead = reasonCatalogue(first.queue).then(async (codes) => {
    catalogue = codes.length ? codes : queue.reasonCodes;
    for (const r of catalogue) labels.set(r.code, r.label);
    fillVerdicts();
    showSummary();
    refresh();
  });
  function restore(kept) {
    draft = kept;
    if (draft.note) note.value = draft.note;
    fill(outcome, welcomeBack(Boolean(draft.verdict || draft.reason || draft.note)));
    catalogueRead.then(() => {
      if (!draft.verdict || ![...verdict.options].some((o) => o.value === draft.verdict)) return;
      verdict.value = draft.verdict;
      reason.fill(validFor(verdict.value));
      if ([...reason.select.options].some((o) => o.value === draft.reason)) reason.select.value = draft.reason;
      refresh();
    });
  }

  const common = (operation, field, input, success) => ({
    operation,
    field,
    input: { itemId: claim.itemId, leaseToken: claim.token, evidenceHash: claim.evidenceHash, ...input },
    context: CONTEXTS.SECOND_REVIEW,
    outcome,
    onSettled,
    busy: (on) => {
      sending = on;
      refresh();
    },
    onResult: (result) => {
      if (result.__typename !== success) return false;
      claim.end("decided");
      return true;
    },
  });

  confirm.addEventListener("click", () => {
    const task = common(ops.CONFIRM_DECISION, "confirmDecision", {}, "DecisionRecorded");
    const onResult = task.onResult;
    task.onResult = (result) => {
      if (!onResult(result)) return false;
      fill(
        outcome,
        doneNotice(
          `Confirmed: ${verdictDone(first.verdict).toLowerCase()} by ${first.reviewer} stands`,
          "The decision is effective now and will be carried out.",
        ),
      );
      return true;
    };
    sendCheck(claim, task);
  });

  const form = h(
    "form",
    { class: "override-form", "aria-label": "Override", novalidate: true },
    h("h4", { class: "sub-title" }, "Or override it"),
    h("p", { class: "hint" }, `A new decision replaces ${first.reviewer}’s, with its own reason from ${first.queue}.`),
    h("label", { for: "override-verdict", class: "label" }, "Override verdict"),
    verdict,
    reason.nodes,
    h("label", { for: "override-note", class: "label" }, "Override note"),
    note,
    h("div", { class: "control-row" }, override),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    verdict.removeAttribute("aria-invalid");
    reason.select.removeAttribute("aria-invalid");
    if (!verdict.value) {
      holdBack(outcome, verdict, { title: "Choose the verdict that should stand first.", next: "Nothing was sent." });
      return;
    }
    const code = reason.select.value;
    if (!code) {
      holdBack(outcome, reason.select, { title: "Choose the reason for the new verdict.", next: "Nothing was sent." });
      return;
    }
    if (catalogue.find((r) => r.code === code)?.requiresNote && !note.value.trim()) {
      holdBack(outcome, note, { title: "A note is required for this reason.", next: "Say what you saw, then override again. Nothing was sent." });
      return;
    }
    note.removeAttribute("aria-invalid");
    const chosen = verdict.value;
    const task = common(
      ops.OVERRIDE_DECISION,
      "overrideDecision",
      { verdict: chosen, reasonCode: code, note: note.value.trim() || null },
      "DecisionRecorded",
    );
    task.draft = { verdict: chosen, reason: code, note: note.value };
    const onResult = task.onResult;
    task.onResult = (result) => {
      if (result.__typename === "InvalidReasonCode") reason.select.setAttribute("aria-invalid", "true");
      if (!onResult(result)) return false;
      fill(
        outcome,
        doneNotice(
          `Overridden: now ${verdictDone(chosen).toLowerCase()} — ${reasonText(code, labels)}`,
          `Recorded as decision ${result.decision.id}; ${first.reviewer}’s decision is superseded.`,
        ),
      );
      return true;
    };
    sendCheck(claim, task);
  });

  const work = workspace(claim, {
    summary: summarySlot,
    onSettled,
    side: (panel) =>
      h(
        "section",
        { class: "card decide second-review", "aria-label": "Second review" },
        h("h3", { class: "card-title" }, "Second review"),
        panel,
        h("p", { class: "hint" }, `${first.reviewer}’s decision takes effect only once someone else confirms it. Read it beside the evidence, then:`),
        confirm,
        form,
        outcome,
      ),
  });
  const stop = claim.onChange(refresh);
  fillVerdicts();
  refresh();
  return {
    node: work.node,
    choose: () => {},
    submitChosen: () => {},
    restore,
    dispose() {
      stop();
      work.dispose();
    },
  };
}

// ---- QA check ---------------------------------------------------------------------------

/** Which of the QA queue's reasons fit an answer: the API takes a code allowed for APPROVE
 *  when agreeing, one allowed for REJECT when disagreeing. */
function qaReasonsFor(codes, agrees) {
  const verdict = agrees ? "APPROVE" : "REJECT";
  return codes.filter((r) => r.verdicts.includes(verdict));
}

/** A claimed QA copy: the decision under check, Agree and Disagree with a reason. */
export function qaWorkspace(claim, queue, { onSettled }) {
  const checked = claim.item.qaOf;
  const codes = queue.reasonCodes;
  const labels = new Map();
  let answer = null;
  let sending = false;

  const summarySlot = h("div", { class: "decision-summary-slot" });
  const showSummary = () => fill(summarySlot, decisionSummary(checked, { labels, currentHash: claim.evidenceHash, title: "Decision under check" }));
  showSummary();
  reasonCatalogue(checked.queue).then((original) => {
    for (const r of original) labels.set(r.code, r.label);
    showSummary();
  });

  const buttons = {
    true: h("button", { type: "button", class: "button verdict verdict-approve", "aria-pressed": "false" }, "Agree"),
    false: h("button", { type: "button", class: "button verdict verdict-reject", "aria-pressed": "false" }, "Disagree"),
  };
  const reason = reasonField("qa-reason", "QA reason", "Choose a reason");
  const note = h("textarea", { id: "qa-note", class: "input", rows: 3, maxlength: 4000, placeholder: "What you checked, for whoever reads the result" });
  const prompt = h("p", { class: "hint prompt", "aria-live": "polite" });
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  // After the reason and the note: the keyboard's way through the form ends by recording.
  const recordButton = h("button", { type: "button", class: "button button-primary button-wide decide-submit" }, "Record result");
  recordButton.addEventListener("click", () => {
    if (answer === null) fill(prompt, "Choose Agree or Disagree first.");
    else record(answer);
  });

  function refresh() {
    const usable = claim.held && !sending;
    // An answer the QA queue has no reason for cannot be recorded: an admin defines them.
    for (const [key, button] of Object.entries(buttons)) button.disabled = !usable || !qaReasonsFor(codes, key === "true").length;
    reason.select.disabled = !usable;
    note.disabled = !usable;
    recordButton.disabled = !usable;
    if (!claim.held) fill(prompt);
  }

  function choose(agrees) {
    answer = agrees;
    for (const [key, button] of Object.entries(buttons)) button.setAttribute("aria-pressed", String(String(agrees) === key));
    reason.fill(qaReasonsFor(codes, agrees));
    if (reason.select.value) fill(prompt, `Press ${agrees ? "Agree" : "Disagree"} again to record it.`);
    else {
      fill(prompt, "Choose the reason, then press the button again.");
      reason.select.focus();
    }
  }

  function record(agrees) {
    if (!claim.held || sending) return;
    const code = reason.select.value;
    // As a verdict button: with a reason that fits, it records; otherwise it chooses.
    if (!code || !qaReasonsFor(codes, agrees).some((r) => r.code === code)) {
      choose(agrees);
      return;
    }
    if (codes.find((r) => r.code === code)?.requiresNote && !note.value.trim()) {
      holdBack(outcome, note, { title: "A note is required for this reason.", next: "Say what you checked, then record it again. Nothing was sent." });
      return;
    }
    note.removeAttribute("aria-invalid");
    const qaLabels = new Map(codes.map((r) => [r.code, r.label]));
    sendCheck(claim, {
      operation: ops.RECORD_QA_RESULT,
      field: "recordQaResult",
      input: { itemId: claim.itemId, leaseToken: claim.token, agrees, reasonCode: code, note: note.value.trim() || null },
      context: CONTEXTS.QA_CHECK,
      outcome,
      onSettled,
      busy: (on) => {
        sending = on;
        refresh();
      },
      onResult: (result) => {
        if (result.__typename === "InvalidReasonCode") reason.select.setAttribute("aria-invalid", "true");
        if (result.__typename !== "QaResultRecorded") return false;
        claim.end("decided");
        fill(
          outcome,
          doneNotice(
            `Recorded: you ${agrees ? "agree" : "disagree"} with ${checked.reviewer}’s decision — ${reasonText(code, qaLabels)}`,
            agrees ? "The decision stands as it was." : "A disagreement is counted in the queue's quality; an approver may overturn the decision.",
          ),
        );
        return true;
      },
    });
  }

  // Before an answer is chosen the list holds every reason of the QA queue.
  reason.fill(codes);
  reason.select.addEventListener("change", () => {
    const code = reason.select.value;
    const fits = [true, false].filter((agrees) => qaReasonsFor(codes, agrees).some((r) => r.code === code));
    // A reason that fits one answer only chooses it.
    if (code && fits.length === 1 && answer !== fits[0]) {
      answer = fits[0];
      for (const [key, button] of Object.entries(buttons)) button.setAttribute("aria-pressed", String(String(answer) === key));
    }
    if (code && answer !== null) fill(prompt, `Press ${answer ? "Agree" : "Disagree"} to record it.`);
  });
  buttons.true.addEventListener("click", () => record(true));
  buttons.false.addEventListener("click", () => record(false));

  const work = workspace(claim, {
    summary: summarySlot,
    onSettled,
    side: (panel) =>
      h(
        "section",
        { class: "card decide qa-check", "aria-label": "QA check" },
        h("h3", { class: "card-title" }, "QA check"),
        panel,
        h("p", { class: "hint" }, `Was ${checked.reviewer}’s decision right on this evidence? Your answer does not change it; it measures the queue's quality.`),
        h("div", { class: "verdicts verdicts-two", role: "group", "aria-label": "Your answer" }, buttons.true, buttons.false),
        reason.nodes,
        h("label", { for: "qa-note", class: "label" }, "QA note"),
        note,
        recordButton,
        prompt,
        outcome,
      ),
  });
  const stop = claim.onChange(refresh);
  refresh();
  return {
    node: work.node,
    choose: () => {},
    submitChosen: () => {},
    dispose() {
      stop();
      work.dispose();
    },
  };
}
