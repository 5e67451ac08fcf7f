// The reviewer's pages: the queue list with live backlogs, and a queue's workspace where an
// item is claimed, read and decided.

import { ApiError, call, serverNow } from "./api.js";
import { activityPanel } from "./activity.js";
import { qaWorkspace, secondReviewWorkspace } from "./checks.js";
import { activeClaim, claimNext, leasePanel, myLeases, resumeLease } from "./claim.js";
import { errorBox, fill, h, readOrSay, spinner } from "./dom.js";
import { clock, count, countdown, duration, verdictDone, verdictWord, when, words } from "./format.js";
import { itemCard } from "./item.js";
import * as live from "./live.js";
import * as ops from "./operations.js";
import { explain } from "./refusals.js";
import * as session from "./session.js";
import * as shortcuts from "./shortcuts.js";
import { awaitsReturn, stepUp, takeDraft, welcomeBack } from "./stepup.js";

const VERDICTS = ["APPROVE", "REJECT", "ESCALATE"];
const VERDICT_KEYS = { a: "APPROVE", r: "REJECT", e: "ESCALATE" };
// A connection holds 20 operations; the page keeps room for the item and exception streams.
const MAX_LIVE_QUEUES = 15;
// A decision whose answer was lost is sent again: the server answers a retry with the
// decision it recorded (replay), never a second one.
const RETRY_DELAYS_MS = [500, 1500, 3000, 6000];
const NOTE_OPTIONAL = "Optional: what you saw, for whoever reads this later";
const NOTE_REQUIRED = "A note is required for this reason.";

function mayClaim(queue) {
  return session.current()?.role === queue.holderRole;
}

/** Live backlog figures for a queue, updated in place; returns the node. */
function backlogFigures(queue, initial) {
  const values = {
    claimable: h("dd", { class: "figure-value" }),
    pending: h("dd", { class: "figure-value" }),
    leased: h("dd", { class: "figure-value" }),
    oldest: h("dd", { class: "figure-value" }),
  };
  const node = h(
    "dl",
    { class: "backlog" },
    h("div", { class: "figure figure-primary", "data-figure": "claimable" }, h("dt", {}, "You may claim"), values.claimable),
    h("div", { class: "figure", "data-figure": "pending" }, h("dt", {}, "Pending"), values.pending),
    h("div", { class: "figure", "data-figure": "leased" }, h("dt", {}, "Leased"), values.leased),
    h("div", { class: "figure", "data-figure": "oldest" }, h("dt", {}, "Oldest pending"), values.oldest),
  );
  node.update = (backlog, { flash = false } = {}) => {
    fill(values.claimable, mayClaim(queue) ? count(backlog.pending) : h("span", { class: "muted small", text: `${words(queue.holderRole)}s only` }));
    fill(values.pending, count(backlog.pending));
    fill(values.leased, count(backlog.leased));
    fill(values.oldest, duration(backlog.oldestPendingAgeSeconds));
    values.oldest.dataset.seconds = backlog.oldestPendingAgeSeconds ?? "";
    if (flash) {
      node.classList.remove("flash");
      void node.offsetWidth;
      node.classList.add("flash");
    }
  };
  node.update(initial);
  return node;
}

function watchBacklog(scope, queue, figures) {
  scope.subscribe(ops.QUEUE_BACKLOG, { queue: queue.name }, (data) => figures.update(data.queueBacklog, { flash: true }));
}

function heldLeaseNotice() {
  const claim = activeClaim();
  if (!claim?.held) return null;
  const target = claim.item.exception ? `#/exceptions/${claim.item.exception.id}` : `#/queue/${encodeURIComponent(claim.queue)}`;
  return h(
    "div",
    { class: "notice notice-info" },
    "You hold a lease on ",
    h("strong", { text: claim.item.externalKey }),
    ` in ${claim.queue}. `,
    h("a", { href: target }, "Go back to it"),
  );
}

/** Leases of one's own (with their tokens), each with a Resume button. */
function heldLeases(leases, { onResume }) {
  return h(
    "ul",
    { class: "held-leases", "aria-label": "Your leases" },
    leases.map((lease) => {
      const button = h("button", { type: "button", class: "button button-primary", "aria-label": `Resume ${lease.item.externalKey}` }, "Resume");
      button.addEventListener("click", () => onResume(lease));
      const left = Date.parse(lease.leaseExpiresAt) - serverNow();
      return h(
        "li",
        { class: "held-lease" },
        h(
          "div",
          {},
          h("strong", { class: "held-lease-key", text: lease.item.externalKey }),
          h("span", { class: "muted small", text: ` in ${lease.item.queue} · ${countdown(left)} left, until ${clock(lease.leaseExpiresAt)}` }),
          lease.item.overdue ? h("span", { class: "badge badge-alert", text: "Overdue" }) : null,
        ),
        button,
      );
    }),
  );
}

// ---- The queue list ---------------------------------------------------------------------

export function queueListPage(main) {
  const scope = new live.Scope();
  const me = session.current();
  const list = h("ul", { class: "queue-list", "aria-label": "Queues" });
  const earlierSlot = h("div", {});
  fill(
    main,
    h(
      "div",
      { class: "page-head" },
      h("div", {}, h("h1", {}, "Queues"), h("p", { class: "muted" }, "Backlogs update live. Open a queue to claim its next item.")),
    ),
    heldLeaseNotice(),
    earlierSlot,
    list,
  );
  fill(list, spinner("Loading your queues"));
  if (!activeClaim()?.held) {
    myLeases().then((leases) => {
      if (!leases.length || activeClaim()?.held) return;
      fill(
        earlierSlot,
        h(
          "div",
          { class: "notice notice-info resume-offer" },
          h("p", { class: "notice-title" }, leases.length === 1 ? "You hold a lease from earlier." : `You hold ${leases.length} leases from earlier.`),
          h("p", {}, "Resume one to take the work up again before it runs out."),
          heldLeases(leases, {
            onResume: (lease) => {
              resumeLease(lease);
              window.location.hash = lease.item.exception ? `#/exceptions/${lease.item.exception.id}` : `#/queue/${encodeURIComponent(lease.item.queue)}`;
            },
          }),
        ),
      );
    });
  }

  (async () => {
    let queues;
    try {
      queues = (await call(ops.QUEUES)).queues;
    } catch (error) {
      fill(list, errorBox("The queues could not be read.", error.message));
      return;
    }
    if (!queues.length) {
      fill(list, h("li", { class: "empty" }, "Your token covers no queue yet. An admin configures queues; ask for a token that names yours."));
      return;
    }
    // Your own queues first: the ones you may claim in.
    queues.sort((a, b) => Number(mayClaim(b)) - Number(mayClaim(a)) || a.name.localeCompare(b.name));
    fill(
      list,
      queues.map((queue, index) => {
        const figures = backlogFigures(queue, queue.stats);
        if (index < MAX_LIVE_QUEUES) watchBacklog(scope, queue, figures);
        return h(
          "li",
          { class: ["queue-card", !mayClaim(queue) && "queue-card-other"] },
          h(
            "div",
            { class: "queue-card-head" },
            h("a", { class: "queue-name", href: `#/queue/${encodeURIComponent(queue.name)}` }, queue.name),
            h("span", { class: "muted small", text: `lease ${duration(queue.leaseTtlSeconds)} · worked by ${queue.holderRole}s` }),
          ),
          figures,
        );
      }),
    );
    // After a reconnect each backlog subscription answers with a fresh snapshot.
  })();

  shortcuts.setHandlers({});
  return () => scope.dispose();
}

// ---- A queue's workspace ----------------------------------------------------------------

export function queuePage(main, name) {
  const scope = new live.Scope();
  let queue = null;
  let work = null;

  const claimButton = h(
    "button",
    { type: "button", class: "button button-primary", disabled: true },
    "Claim next",
    h("kbd", { "aria-hidden": "true" }, "n"),
  );
  const figuresSlot = h("div", { class: "queue-figures" });
  const workspace = h("div", { class: "workspace" }, spinner("Loading the queue"));
  const problem = h("div", { class: "claim-problem" });

  fill(
    main,
    h(
      "div",
      { class: "page-head" },
      h(
        "div",
        {},
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/" }, "Queues"), " / "),
        h("h1", { text: name }),
      ),
      h("div", { class: "page-actions" }, claimButton),
    ),
    figuresSlot,
    problem,
    workspace,
  );

  function canClaimNow() {
    return queue && mayClaim(queue) && !activeClaim()?.held;
  }

  function refreshClaimButton() {
    claimButton.disabled = !canClaimNow();
    claimButton.title = !queue || mayClaim(queue) ? (activeClaim()?.held ? "Decide or release the item you hold first" : "") : `Only ${queue.holderRole}s claim here`;
  }

  async function claim() {
    if (!canClaimNow()) return;
    claimButton.disabled = true;
    fill(problem);
    try {
      const { claim: claimed, refusal } = await claimNext(name, queue.leaseTtlSeconds);
      if (refusal?.__typename === "LeaseLimitReached") {
        const words_ = explain(refusal);
        fill(
          workspace,
          h(
            "div",
            { class: "empty lease-limit" },
            h("h2", { text: words_.title }),
            h("p", { class: "muted", text: words_.next }),
            heldLeases(refusal.held, { onResume: resume }),
          ),
        );
        return;
      }
      if (refusal) {
        const words_ = explain(refusal);
        fill(
          workspace,
          h(
            "div",
            { class: "empty" },
            h("h2", { text: refusal.__typename === "QueueEmpty" ? `Nothing to claim in ${name} right now` : words_.title }),
            h("p", { class: "muted", text: refusal.__typename === "QueueEmpty" ? "The backlog above updates live. Press n to try again." : `${words_.detail} ${words_.next}` }),
            refusal.__typename === "QueueEmpty"
              ? h(
                  "p",
                  { class: "muted" },
                  "Items that wait here may still not be yours to take: a second review or a QA check of a decision of yours goes to someone else, and an assigned item to its reviewer.",
                )
              : null,
          ),
        );
        return;
      }
      if (claimed.item.exception) {
        window.location.hash = `#/exceptions/${claimed.item.exception.id}`;
        return;
      }
      showWork(claimed, { focus: true });
    } catch (error) {
      fill(problem, errorBox("Could not claim.", error.message));
    } finally {
      refreshClaimButton();
    }
  }

  /** Shows the claimed item; `focus`: the reader asked for it (Claim next, Resume), so focus
   *  moves to it, and the next Tab goes on into it rather than from a disabled button. */
  function showWork(claim, { focus = false } = {}) {
    if (work) work.dispose();
    // A second review or a QA check is judged, not decided afresh (checks.js).
    const build = claim.item.awaitingSecondReview ? secondReviewWorkspace : claim.item.qaOf ? qaWorkspace : decisionWorkspace;
    work = build(claim, queue, {
      onSettled: ({ decided } = {}) => {
        refreshClaimButton();
        // The next item is one key (or one click) away.
        if (decided) claimButton.focus();
      },
    });
    fill(workspace, work.node);
    refreshClaimButton();
    // The first card: the decision under judgement, or the item itself.
    const first = work.node.querySelector(".work-main")?.firstElementChild;
    if (focus && first) {
      first.tabIndex = -1;
      first.focus();
    }
  }

  /** Takes up a lease this user holds already (LeaseLimitReached, me.leases). */
  function resume(held) {
    if (held.item.exception) {
      resumeLease(held, queue?.leaseTtlSeconds);
      window.location.hash = `#/exceptions/${held.item.exception.id}`;
      return;
    }
    if (held.item.queue !== name) {
      resumeLease(held);
      window.location.hash = `#/queue/${encodeURIComponent(held.item.queue)}`;
      return;
    }
    fill(problem);
    showWork(resumeLease(held, queue.leaseTtlSeconds), { focus: true });
  }

  const claim_ = () => claim();
  claimButton.addEventListener("click", claim_);

  shortcuts.setHandlers({
    n: claim_,
    a: () => work?.choose("APPROVE"),
    r: () => work?.choose("REJECT"),
    e: () => work?.choose("ESCALATE"),
    Enter: () => work?.submitChosen(),
  });

  (async () => {
    queue = await readOrSay(workspace, async () => (await call(ops.QUEUE, { name })).queue, "The queue could not be read.", [
      `There is no queue ${name} that your token covers.`,
      "Check the name, or ask for a token that names it.",
    ]);
    if (!queue) return;
    const figures = backlogFigures(queue, queue.stats);
    fill(figuresSlot, figures);
    watchBacklog(scope, queue, figures);
    const held = activeClaim();
    if (held && held.queue === name && !held.item.exception && (held.held || held.state === "lost")) {
      showWork(held);
    } else if (!mayClaim(queue)) {
      fill(workspace, h("div", { class: "empty" }, h("h2", {}, `${words(queue.holderRole)}s claim in this queue`), h("p", { class: "muted" }, "You can watch its backlog here.")));
    } else {
      const earlier = (await myLeases()).filter((lease) => lease.item.queue === name);
      // Back from signing in again for one of them: it is open again, as it was left.
      const back = activeClaim()?.held ? null : earlier.find((lease) => awaitsReturn(lease.item.id));
      if (back) {
        showWork(resumeLease(back, queue.leaseTtlSeconds), { focus: true });
        work.restore?.(takeDraft(back.item.id));
        return;
      }
      if (earlier.length && !activeClaim()?.held) {
        fill(
          workspace,
          h(
            "div",
            { class: "empty resume-offer" },
            h("h2", {}, earlier.length === 1 ? "You hold a lease here from earlier" : `You hold ${earlier.length} leases here from earlier`),
            h("p", { class: "muted" }, "Resume to take the work up again, or press ", h("kbd", {}, "n"), " to claim the next item."),
            heldLeases(earlier, { onResume: resume }),
          ),
        );
        refreshClaimButton();
        return;
      }
      fill(
        workspace,
        h(
          "div",
          { class: "empty" },
          h("h2", {}, "Ready when you are"),
          h("p", { class: "muted" }, "Claim next gives you the most urgent item, leased to you for ", duration(queue.leaseTtlSeconds), ". Press ", h("kbd", {}, "n"), " or ", h("kbd", {}, "?"), " for the shortcuts."),
        ),
      );
    }
    refreshClaimButton();
  })();

  return () => {
    scope.dispose();
    if (work) work.dispose();
  };
}

// ---- Reading and deciding one item ------------------------------------------------------

/** The item under a claim, and the form that decides it. */
export function decisionWorkspace(claim, queue, { onSettled }) {
  const reasons = queue.reasonCodes;
  let chosen = null;
  let submitting = false;
  let decided = false;

  const buttons = Object.fromEntries(
    VERDICTS.map((verdict) => {
      const key = Object.entries(VERDICT_KEYS).find(([, v]) => v === verdict)[0];
      const button = h(
        "button",
        { type: "button", class: `button verdict verdict-${verdict.toLowerCase()}`, "aria-pressed": "false" },
        verdictWord(verdict),
        h("kbd", { "aria-hidden": "true" }, key),
      );
      button.addEventListener("click", () => submit(verdict));
      return [verdict, button];
    }),
  );
  const reasonSelect = h("select", { id: "reason", class: "input", name: "reason" });
  const note = h("textarea", { id: "note", class: "input", rows: 3, maxlength: 4000, placeholder: NOTE_OPTIONAL, "aria-describedby": "note-requirement" });
  const noteRequirement = h("p", { id: "note-requirement", class: "field-requirement", hidden: true });
  // The codes that need a note: the catalogue's, and any the server named since it was read.
  const needsNote = new Set(reasons.filter((r) => r.requiresNote).map((r) => r.code));
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  // Said as it changes: what the next key or press does.
  const prompt = h("p", { class: "hint prompt", "aria-live": "polite" });
  // The form's last control, after the reason and the note it sends: a verdict button sends
  // too once its reason is chosen, but the keyboard's way through the form ends here.
  const submitButton = h("button", { type: "button", class: "button button-primary button-wide decide-submit" }, "Submit decision");
  submitButton.addEventListener("click", () => submitChosen());

  function noteRequired() {
    return needsNote.has(reasonSelect.value);
  }

  /** Says, before anything is sent, whether the chosen reason needs a note; `problem`
   *  marks the field as the reason a submission was held back or refused. */
  function showNoteRequirement(problem = null) {
    const required = noteRequired();
    note.required = required;
    note.placeholder = required ? "Required for this reason: what you saw, for whoever reads this later" : NOTE_OPTIONAL;
    noteRequirement.classList.toggle("is-problem", Boolean(problem));
    if (problem) note.setAttribute("aria-invalid", "true");
    else note.removeAttribute("aria-invalid");
    noteRequirement.hidden = !problem && !required;
    fill(noteRequirement, problem ?? (required ? NOTE_REQUIRED : ""));
  }

  function reasonsFor(verdict) {
    return verdict ? reasons.filter((r) => r.verdicts.includes(verdict)) : reasons;
  }

  function fillReasons() {
    const keep = reasonSelect.value;
    const options = [h("option", { value: "" }, chosen ? `Choose a reason to ${verdictWord(chosen).toLowerCase()}` : "Choose a reason")];
    if (chosen) {
      for (const r of reasonsFor(chosen)) options.push(h("option", { value: r.code }, `${r.label} (${r.code})`));
    } else {
      for (const verdict of VERDICTS) {
        const group = reasonsFor(verdict);
        if (group.length) {
          options.push(h("optgroup", { label: verdictWord(verdict) }, group.map((r) => h("option", { value: r.code }, `${r.label} (${r.code})`))));
        }
      }
    }
    fill(reasonSelect, options);
    const valid = reasonsFor(chosen);
    if (valid.some((r) => r.code === keep)) reasonSelect.value = keep;
    else if (chosen && valid.length === 1) reasonSelect.value = valid[0].code;
    else reasonSelect.value = "";
  }

  function choose(verdict) {
    if (!claim.held || submitting) return;
    chosen = verdict;
    for (const [v, button] of Object.entries(buttons)) button.setAttribute("aria-pressed", String(v === verdict));
    fillReasons();
    showNoteRequirement();
    if (reasonSelect.value) {
      fill(prompt, "Press ", h("kbd", {}, "Enter"), ` or ${verdictWord(verdict)} to submit.`);
    } else {
      fill(prompt, "Choose the reason (arrow keys in the box), then press ", h("kbd", {}, "Enter"), ".");
      reasonSelect.focus();
    }
  }

  reasonSelect.addEventListener("change", () => {
    const code = reasonSelect.value;
    if (!code) return;
    const reason = reasons.find((r) => r.code === code);
    // A reason that fits one verdict only chooses it.
    if (!chosen || !reason.verdicts.includes(chosen)) {
      if (reason.verdicts.length === 1) {
        chosen = reason.verdicts[0];
        for (const [v, button] of Object.entries(buttons)) button.setAttribute("aria-pressed", String(v === chosen));
        fillReasons();
        reasonSelect.value = code;
      }
    }
    if (chosen) fill(prompt, "Press ", h("kbd", {}, "Enter"), ` or ${verdictWord(chosen)} to submit.`);
    showNoteRequirement();
  });
  note.addEventListener("input", () => {
    if (note.getAttribute("aria-invalid") === "true" && note.value.trim()) showNoteRequirement();
  });

  function refresh() {
    const usable = claim.held && !submitting;
    for (const [verdict, button] of Object.entries(buttons)) {
      button.disabled = !usable || reasonsFor(verdict).length === 0;
    }
    reasonSelect.disabled = !usable;
    note.disabled = !usable;
    submitButton.disabled = !usable;
    if (!claim.held) fill(prompt);
  }

  function submitChosen() {
    if (!chosen) {
      if (claim.held) fill(prompt, "Choose the verdict first: ", h("kbd", {}, "a"), " approve, ", h("kbd", {}, "r"), " reject, ", h("kbd", {}, "e"), " escalate.");
      return;
    }
    submit(chosen);
  }

  async function send(input) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return (await call(ops.SUBMIT_DECISION, { input })).submitDecision;
      } catch (error) {
        const retriable = error instanceof ApiError && (error.network || error.code === "UNAVAILABLE");
        if (!retriable || attempt >= RETRY_DELAYS_MS.length) throw error;
        fill(outcome, h("p", { class: "muted" }, "The answer did not arrive; sending the same decision again…"));
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
      }
    }
  }

  async function submit(verdict) {
    // Nothing is submitted on a lost lease, however the key or button was reached.
    if (!claim.held || submitting) return;
    const code = reasonSelect.value;
    const reason = reasons.find((r) => r.code === code);
    if (!reason || !reason.verdicts.includes(verdict)) {
      choose(verdict);
      return;
    }
    if (noteRequired() && !note.value.trim()) {
      showNoteRequirement(`${NOTE_REQUIRED} Say what you saw, then submit again.`);
      note.focus();
      return;
    }
    submitting = true;
    claim.settling = true;
    let focusNote = false;
    refresh();
    fill(outcome);
    try {
      const result = await send({
        itemId: claim.itemId,
        leaseToken: claim.token,
        verdict,
        reasonCode: code,
        evidenceHash: claim.evidenceHash,
        note: note.value.trim() || null,
      });
      if (result.__typename === "DecisionRecorded") {
        claim.end("decided");
        const provisional = result.decision.status === "PROVISIONAL";
        fill(
          outcome,
          h(
            "div",
            { class: "notice notice-success", role: "status" },
            h("p", { class: "notice-title" }, `${verdictDone(result.decision.verdict)}: ${reason.label}`),
            provisional
              ? h("p", { "data-status": "PROVISIONAL" }, "Provisional: this queue needs a second review of it. It takes effect only once another reviewer confirms it.")
              : null,
            h("p", {}, `Recorded as decision ${result.decision.id}${result.replay ? " (your earlier submission, answered again)" : ""}. Press `, h("kbd", {}, "n"), " for the next item."),
          ),
        );
        decided = true;
      } else if (result.__typename === "ReauthenticationRequired") {
        stepUp(outcome, result, { itemId: claim.itemId, draft: { verdict, reason: code, note: note.value } });
      } else {
        const noteRefused = result.__typename === "InvalidInput" && result.field === "note";
        if (noteRefused) {
          // The catalogue changed since the page read it, or the note was too long.
          if (!note.value.trim()) needsNote.add(code);
          showNoteRequirement(note.value.trim() ? result.message : `${NOTE_REQUIRED} Say what you saw, then submit again.`);
        }
        const { title, detail, next } = explain(noteRefused ? { ...result, field: "decision note" } : result);
        if (result.__typename === "StaleLease") claim.lose(title);
        if (result.__typename === "EvidenceChanged") claim.lose("The evidence changed: the item was uploaded again with new content.");
        fill(outcome, h("div", { class: "notice notice-error", role: "alert" }, h("p", { class: "notice-title", text: title }), detail ? h("p", { class: "muted", text: detail }) : null, h("p", { text: next })));
        focusNote = noteRefused;
      }
    } catch (error) {
      fill(outcome, errorBox("The decision could not be sent.", `${error.message} Nothing is known to be recorded; try again while the lease lasts.`));
    } finally {
      submitting = false;
      claim.settling = false;
      refresh();
      // Only now: the field was disabled while the decision was in flight.
      if (focusNote) note.focus();
      // The page knows of its own decision: the story is read again now, not only when the
      // item's update arrives over the socket (which may come before or after this point).
      if (decided) activity.reread();
      onSettled({ decided });
    }
  }

  const hold = holdControl(claim, queue, { onHeld: () => refresh() });
  const panel = leasePanel(claim, { onEnded: () => { refresh(); hold.refresh(); onSettled(); } });
  const activity = activityPanel(claim.itemId, { queue: claim.queue });
  fillReasons();
  showNoteRequirement();
  const stop = claim.onChange(refresh);
  refresh();

  const form = h(
    "section",
    { class: "card decide", "aria-label": "Decision" },
    h("h3", { class: "card-title" }, "Decision"),
    panel,
    h("div", { class: "verdicts", role: "group", "aria-label": "Verdict" }, Object.values(buttons)),
    h("label", { for: "reason", class: "label" }, "Reason"),
    reasonSelect,
    h("label", { for: "note", class: "label" }, "Decision note"),
    note,
    noteRequirement,
    submitButton,
    prompt,
    h("p", { class: "hint" }, h("kbd", {}, "a"), " ", h("kbd", {}, "r"), " ", h("kbd", {}, "e"), " choose the verdict · ", h("kbd", {}, "Enter"), " submits · ", h("kbd", {}, "?"), " all shortcuts"),
    outcome,
  );

  const node = h(
    "div",
    { class: "work" },
    h("div", { class: "work-main" }, itemCard(claim.item, claim.evidenceHash), activity.node),
    h("aside", { class: "work-side" }, form, hold.node),
  );
  /** Back from signing in again (stepup.js): the verdict, reason and note as they were. */
  function restore(draft) {
    if (draft.verdict && VERDICTS.includes(draft.verdict)) choose(draft.verdict);
    if (draft.reason && [...reasonSelect.options].some((o) => o.value === draft.reason)) {
      reasonSelect.value = draft.reason;
      reasonSelect.dispatchEvent(new Event("change"));
    }
    if (draft.note) note.value = draft.note;
    fill(outcome, welcomeBack(Boolean(draft.verdict || draft.reason || draft.note)));
  }

  return {
    node,
    choose,
    submitChosen,
    restore,
    dispose: () => {
      stop();
      panel.dispose();
      hold.dispose();
      activity.dispose();
    },
  };
}

// ---- Putting a claimed item on hold -------------------------------------------------------

/** A datetime-local input's value for a moment (the browser's own time zone). */
function localInputValue(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** Hold: the claimed item waits, for one of the queue's hold reasons, until a time; the
 *  lease ends as with a release and the item comes back by itself when the hold ends. */
export function holdControl(claim, queue, { onHeld = () => {} } = {}) {
  const reasons = queue.holdReasons ?? [];
  const reason = h(
    "select",
    { id: "hold-reason", class: "input", name: "holdReason" },
    h("option", { value: "" }, "Choose why it waits"),
    reasons.map((r) => h("option", { value: r.code }, `${r.label} (${r.code})`)),
  );
  // Tomorrow at this time: a day is the usual wait for an answer.
  const until = h("input", { id: "hold-until", class: "input", type: "datetime-local", name: "holdUntil", value: localInputValue(new Date(Date.now() + 86_400_000)) });
  const button = h("button", { type: "submit", class: "button" }, "Hold");
  const outcome = h("div", { class: "hold-outcome", "aria-live": "polite" });
  let sending = false;

  function refresh() {
    const usable = claim.held && !sending && reasons.length > 0;
    reason.disabled = !usable;
    until.disabled = !usable;
    button.disabled = !usable;
  }

  function refuse(title, detail, next) {
    fill(
      outcome,
      h(
        "div",
        { class: "notice notice-error", role: "alert" },
        h("p", { class: "notice-title", text: title }),
        detail ? h("p", { class: "muted", text: detail }) : null,
        next ? h("p", { text: next }) : null,
      ),
    );
  }

  async function send() {
    if (!claim.held || sending) return;
    fill(outcome);
    reason.removeAttribute("aria-invalid");
    until.removeAttribute("aria-invalid");
    if (!reason.value) {
      reason.setAttribute("aria-invalid", "true");
      refuse("Choose a hold reason first.", null, "It says, to whoever looks, why the item waits.");
      reason.focus();
      return;
    }
    const moment = until.value ? new Date(until.value) : null;
    if (!moment || Number.isNaN(moment.getTime())) {
      until.setAttribute("aria-invalid", "true");
      refuse("Say until when it waits.", null, "The item comes back to the queue by itself at that time.");
      until.focus();
      return;
    }
    sending = true;
    refresh();
    try {
      const result = await claim.hold({ until: moment.toISOString(), reason: reason.value });
      if (result.__typename === "ItemHeld") {
        const label = reasons.find((r) => r.code === reason.value)?.label ?? reason.value;
        fill(
          outcome,
          h(
            "div",
            { class: "notice notice-success", role: "status" },
            h("p", { class: "notice-title", text: `On hold: ${label}` }),
            h("p", {}, `It comes back to the queue at ${when(claim.heldUntil)}. Press `, h("kbd", {}, "n"), " for the next item."),
          ),
        );
        onHeld();
      } else {
        const field = result.__typename === "InvalidInput" ? result.field : result.__typename === "InvalidHoldReason" ? "reason" : null;
        if (field === "until") until.setAttribute("aria-invalid", "true");
        if (field === "reason") reason.setAttribute("aria-invalid", "true");
        const { title, detail, next } = explain(field === "until" ? { ...result, field: "hold until" } : field === "reason" && result.__typename === "InvalidInput" ? { ...result, field: "hold reason" } : result);
        refuse(title, detail, next);
      }
    } catch (error) {
      refuse("The hold could not be sent.", error.message, "Nothing is known to be written; try again while the lease lasts.");
    } finally {
      sending = false;
      refresh();
    }
  }

  const form = h(
    "form",
    { class: "card hold-form", "aria-label": "Hold", novalidate: true },
    h("h3", { class: "card-title" }, "Hold"),
    reasons.length
      ? [
          h("p", { class: "hint" }, "Waiting on someone? Hold gives the item back until a time; nobody can claim it until then."),
          h("label", { for: "hold-reason", class: "label" }, "Hold reason"),
          reason,
          h("label", { for: "hold-until", class: "label" }, "Hold until"),
          until,
          h("div", { class: "hold-actions" }, button),
          outcome,
        ]
      : h("p", { class: "hint" }, "This queue has no hold reasons yet: an admin defines them."),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  const stop = claim.onChange(refresh);
  refresh();
  return { node: form, refresh, dispose: stop };
}
