// The header's search box, on every page (`/` focuses it): an item's id or an integration's
// external key opens the item; anything else opens the results page, filtered by what was
// typed as a key prefix (search.js).

import { ApiError, call } from "./api.js";
import { h } from "./dom.js";
import * as ops from "./operations.js";
import { searchHash } from "./searchparams.js";

export const SEARCH_BOX_ID = "search-box";

/** The item an external key names, if exactly one in the token's queues:
 *  {item} | {ambiguous: {message, queues}} | {} (none). */
export async function itemByKey(key) {
  const { itemByExternalKey: found } = await call(ops.ITEM_BY_EXTERNAL_KEY, { externalKey: key });
  if (!found) return {};
  if (found.__typename === "AmbiguousExternalKey") return { ambiguous: found };
  return { item: found };
}

/** Where the text leads: the item's page, or the results filtered by it as a key prefix. */
export async function destination(text) {
  if (/^\d+$/.test(text)) {
    try {
      const { item } = await call(ops.FIND_ITEM, { id: text });
      if (item) return `#/item/${encodeURIComponent(item.id)}`;
    } catch (error) {
      // An id beyond the server's range is no id: it may still be a key.
      if (!(error instanceof ApiError) || error.network || error.code === "UNAUTHENTICATED") throw error;
    }
  }
  const { item } = await itemByKey(text);
  if (item) return `#/item/${encodeURIComponent(item.id)}`;
  return searchHash("items", { externalKeyPrefix: text }, { q: text });
}

/** The box. `go(hash)` opens an address (again, when it is the one shown). */
export function searchBox(go) {
  const input = h("input", {
    id: SEARCH_BOX_ID,
    class: "search-input",
    type: "search",
    name: "q",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "Id or external key",
    "aria-keyshortcuts": "/",
    // The page's own address: what the results page was opened with stays in the box.
    value: new URLSearchParams(window.location.hash.split("?")[1] ?? "").get("q") ?? "",
  });
  const form = h(
    "form",
    { class: "search-form", role: "search", "aria-label": "Cases" },
    h("label", { for: SEARCH_BOX_ID, class: "visually-hidden" }, "Search cases"),
    h("span", { class: "search-icon", "aria-hidden": "true" }),
    input,
    h("kbd", { class: "search-kbd", "aria-hidden": "true" }, "/"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) {
      go("#/search");
      return;
    }
    form.setAttribute("aria-busy", "true");
    try {
      go(await destination(text));
    } catch (error) {
      // Not reachable now: the results page says why, with the filter in place.
      if (!(error instanceof ApiError && error.code === "UNAUTHENTICATED")) {
        go(searchHash("items", { externalKeyPrefix: text }, { q: text }));
      }
    } finally {
      form.removeAttribute("aria-busy");
    }
  });
  return form;
}

/** Puts focus in the box, its text selected, ready to type over. */
export function focusSearch() {
  const input = document.getElementById(SEARCH_BOX_ID);
  if (!input) return false;
  input.focus();
  input.select();
  return true;
}
