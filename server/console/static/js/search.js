// The results of a search (#/search?… for items, #/search/decisions?… for decisions): every
// filter of ItemSearch or DecisionSearch as a labelled control, the address holding them
// all (shareable: opening it restores the controls and the rows), the rows as a table one
// page at a time by keyset, and the same search as a CSV file.

import { ApiError, call, download } from "./api.js";
import { errorBox, fill, h, spinner } from "./dom.js";
import { count } from "./format.js";
import * as ops from "./operations.js";
import * as session from "./session.js";
import { filterForm, markField, readForm } from "./searchform.js";
import { itemByKey, SEARCH_BOX_ID } from "./searchbox.js";
import { KINDS, fieldsOf, queryString, readParams, searchHash, switchKind, toFilter } from "./searchparams.js";
import { decisionTable, itemTable } from "./searchtable.js";

const PAGE_SIZE = 50;
const TITLES = { items: "Items", decisions: "Decisions" };
// Who may export (the CSV routes refuse the others).
const EXPORTING_ROLES = ["manager", "compliance", "admin"];
const ORDER_WORDS = {
  items: { NEWEST_FIRST: "newest activity first", OLDEST_FIRST: "oldest activity first" },
  decisions: { NEWEST_FIRST: "newest first", OLDEST_FIRST: "oldest first" },
};

export function itemSearchPage(main) {
  return searchPage(main, "items");
}

export function decisionSearchPage(main) {
  return searchPage(main, "decisions");
}

// The address as written: the router decodes its parts, which would turn a cursor's or a
// key's escaped "&" or "+" into separators.
function rawQuery() {
  const hash = window.location.hash;
  const at = hash.indexOf("?");
  return at < 0 ? "" : hash.slice(at + 1);
}

function kindLinks(kind, values) {
  const link = (which) =>
    h("a", { href: which === kind ? searchHash(kind, values) : switchKind(kind, values), "aria-current": which === kind ? "page" : null }, TITLES[which]);
  return h("nav", { class: "search-kinds", "aria-label": "Search for" }, link("items"), link("decisions"));
}

/** What the text typed in the box turned out to be, beside the results it opened. */
async function lookupNote(q) {
  if (!q) return null;
  if (/^\d+$/.test(q)) {
    const byId = await call(ops.FIND_ITEM, { id: q }).catch(() => null);
    if (byId?.item) {
      return h("div", { class: "notice notice-info", role: "status" }, h("p", { class: "notice-title" }, `Item ${q} is in your queues. `, h("a", { href: `#/item/${encodeURIComponent(q)}` }, "Open it")));
    }
  }
  const found = await itemByKey(q).catch(() => null);
  if (found?.item) {
    return h(
      "div",
      { class: "notice notice-info", role: "status" },
      h("p", { class: "notice-title" }, `“${q}” is the external key of item ${found.item.id} in ${found.item.queue}. `, h("a", { href: `#/item/${encodeURIComponent(found.item.id)}` }, "Open it")),
    );
  }
  if (found?.ambiguous) {
    const queues = found.ambiguous.queues;
    return h(
      "div",
      { class: "notice notice-warning", role: "status" },
      h("p", { class: "notice-title", text: `“${q}” is an external key in ${queues.length} queues: ${queues.join(", ")}.` }),
      h("p", { text: "Each queue's item is listed below; open the one you mean, or choose its queue in Queues." }),
    );
  }
  return h(
    "div",
    { class: "notice notice-info", role: "status" },
    h("p", { class: "notice-title", text: `Nothing matched “${q}” exactly: no item has that id or external key in your queues.` }),
    h("p", { text: "Below: the items whose external key starts with it." }),
  );
}

async function exportCsv(link, status) {
  fill(status, "Preparing the CSV…");
  try {
    const response = await download(link.getAttribute("href"));
    if (!response.ok) {
      const text = await response.text();
      let message = text.trim().slice(0, 300);
      try {
        const body = JSON.parse(text);
        message = body.errors?.[0]?.message ?? body.message ?? body.error ?? message;
      } catch {
        // Not JSON: the text as it came.
      }
      fill(status, errorBox("The export was refused.", message || `The server answered ${response.status}.`));
      return;
    }
    const named = /filename="?([^";]+)"?/.exec(response.headers.get("content-disposition") ?? "");
    const url = URL.createObjectURL(await response.blob());
    const save = h("a", { href: url, download: named ? named[1] : link.getAttribute("download"), hidden: true });
    document.body.append(save);
    save.click();
    save.remove();
    // Long enough for the browser to have taken the file.
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    fill(status, "The CSV is downloaded.");
  } catch (error) {
    fill(status, errorBox("The export could not be fetched.", error.message));
  }
}

function searchPage(main, kind) {
  const { values, q, after } = readParams(kind, rawQuery());
  const { noun, csv } = KINDS[kind];
  const box = document.getElementById(SEARCH_BOX_ID);
  if (box && document.activeElement !== box) box.value = q;

  const note = h("div", { class: "search-note" });
  const problems = h("div", { class: "search-problems" });
  const formSlot = h("div", { class: "search-form-slot" }, spinner("Loading the filters"));
  const summary = h("p", { class: "muted search-summary", "aria-live": "polite" });
  const results = h("div", { class: "search-results" });
  const exportStatus = h("div", { class: "export-status", role: "status" });
  const exportLink = !session.isRole(...EXPORTING_ROLES) ? null : h("a", { class: "button", href: `${csv}?${queryString(kind, values)}`, download: `${kind}.csv` }, "Export CSV");
  exportLink?.addEventListener("click", (event) => {
    event.preventDefault();
    exportCsv(exportLink, exportStatus);
  });
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });

  fill(
    main,
    h(
      "div",
      { class: "page-head" },
      h("div", {}, h("h1", {}, `Search: ${TITLES[kind].toLowerCase()}`), h("p", { class: "muted" }, `Every ${noun} across your queues that matches all the filters. The address keeps them: share it to share the search.`)),
      h("div", { class: "page-actions" }, kindLinks(kind, values), exportLink),
    ),
    note,
    formSlot,
    exportStatus,
    problems,
    summary,
    results,
    pager,
  );

  function apply(event) {
    event.preventDefault();
    const next = searchHash(kind, readForm(kind, formSlot), { q: "" });
    // The same search again (its rows may have changed): drawn again as a new address is.
    if (window.location.hash === next) window.dispatchEvent(new HashChangeEvent("hashchange"));
    else window.location.hash = next;
  }

  function pageTo(cursors) {
    window.location.hash = searchHash(kind, values, { q, after: cursors });
  }

  function showRows(connection) {
    const rows = connection.edges.map((edge) => edge.node);
    const first = after.length * PAGE_SIZE + 1;
    const order = ORDER_WORDS[kind][values.order || "NEWEST_FIRST"];
    // A table sits in a box of its own; "nothing here" is a box already.
    results.classList.toggle("table-wrap", rows.length > 0);
    if (!rows.length) {
      fill(summary, after.length ? `No more ${noun}s.` : `No ${noun}s match these filters.`);
      fill(results, h("div", { class: "empty" }, h("h2", {}, `No ${noun}s here`), h("p", { class: "muted" }, after.length ? "The previous page was the last." : "Widen the filters, or check them in the address.")));
    } else {
      fill(summary, `${TITLES[kind]} ${count(first)}–${count(first + rows.length - 1)}, ${order}${connection.pageInfo.hasNextPage ? "; more on the next page" : ""}.`);
      fill(results, kind === "items" ? itemTable(rows) : decisionTable(rows));
    }
    const previous = h("button", { type: "button", class: "button", disabled: !after.length, onclick: () => pageTo(after.slice(0, -1)) }, "Previous page");
    const next = h("button", { type: "button", class: "button", disabled: !connection.pageInfo.hasNextPage, onclick: () => pageTo([...after, connection.pageInfo.endCursor]) }, "Next page");
    // One page and no other: nothing to page through.
    if (!after.length && !connection.pageInfo.hasNextPage) return;
    fill(pager, previous, h("span", { class: "muted", text: `Page ${after.length + 1}` }), next);
  }

  function refused(error) {
    const narrowBy = error.extensions?.narrowBy ?? [];
    const labels = new Map(fieldsOf(kind).map((field) => [field.name, field.label]));
    for (const name of narrowBy) markField(formSlot, name, "Narrow the search here", "narrow");
    fill(
      problems,
      h(
        "div",
        { class: "notice notice-warning search-too-broad", role: "alert" },
        h("p", { class: "notice-title", text: "This search is too broad to answer page by page." }),
        h("p", { text: error.message }),
        narrowBy.length ? h("p", {}, "Add one of the marked filters: ", narrowBy.map((name) => labels.get(name) ?? name).join(", "), ".") : null,
      ),
    );
  }

  (async () => {
    const wanted = toFilter(kind, values);
    const [queues, noteNode, answer] = await Promise.all([
      call(ops.SEARCH_QUEUES).then((data) => data.queues.map((queue) => queue.name), () => []),
      kind === "items" ? lookupNote(q) : null,
      wanted.filter
        ? call(kind === "items" ? ops.SEARCH_ITEMS : ops.SEARCH_DECISIONS, { filter: wanted.filter, after: after.at(-1) ?? null }).catch((error) => ({ error }))
        : null,
    ]);
    if (!main.isConnected || !main.contains(formSlot)) return;
    fill(note, noteNode);
    fill(formSlot, filterForm(kind, values, queues, apply));
    if (wanted.problems) {
      for (const [name, message] of Object.entries(wanted.problems)) markField(formSlot, name, message, "invalid");
      fill(problems, errorBox("Some filters in the address are not valid, so nothing was searched.", "Each is marked beside its control; correct them and apply the filters."));
      return;
    }
    if (answer.error) {
      if (answer.error instanceof ApiError && answer.error.code === "LIMIT_EXCEEDED") refused(answer.error);
      else fill(problems, errorBox(`The ${noun}s could not be read.`, answer.error.message));
      return;
    }
    const result = kind === "items" ? answer.items : answer.decisions;
    if (result.__typename === "InvalidInput") {
      const shown = result.field && markField(formSlot, result.field, result.message, "invalid");
      fill(problems, errorBox(shown ? "A filter was not accepted: it is marked below." : "The search was not accepted.", result.message));
      return;
    }
    showRows(result);
  })();
}
