// A few helpers to build the page without innerHTML: text is always set as text, so nothing
// an item's payload says can become markup.

/**
 * h("button", {class: "primary", onclick: fn, "aria-label": "…"}, "Text", child, …)
 * Props starting with "on" are listeners; `class`, `text`, `dataset` and `hidden` are
 * handled; other props become attributes (false, null and undefined leave them out).
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "class") {
      node.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    } else if (name === "text") {
      node.textContent = value;
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else if (name === "value") {
      node.value = value;
    } else if (name === "checked" || name === "disabled" || name === "hidden") {
      node[name] = Boolean(value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces a node's children. Focus inside it stays where it was: on the same control of
 *  the new content, when there is one (a live list read again under the keyboard). */
export function fill(node, ...children) {
  const focused = document.activeElement;
  const had = focused && focused !== node && node.contains(focused) ? signature(focused) : null;
  node.replaceChildren();
  append(node, children);
  if (had && !node.contains(document.activeElement)) {
    const again = [...node.querySelectorAll(had.tag)].find((candidate) => signature(candidate).key === had.key);
    again?.focus({ preventScroll: true });
  }
  return node;
}

/** What makes a control the same one after its list is drawn again: what it is, what it
 *  says, and the row or panel it belongs to. */
function signature(node) {
  const row = node.closest("[data-item], [data-exception], [data-row], [data-redrive], [data-panel]");
  const parts = [
    node.tagName,
    node.id,
    node.getAttribute("name"),
    node.getAttribute("type"),
    node.getAttribute("aria-label"),
    node.getAttribute("href"),
    node.textContent.trim().slice(0, 80),
    row ? [...row.attributes].filter((a) => a.name.startsWith("data-")).map((a) => `${a.name}=${a.value}`).join(",") : "",
  ];
  return { tag: node.tagName.toLowerCase(), key: JSON.stringify(parts) };
}

/** A definition list of [term, value] pairs; values may be nodes. */
export function facts(pairs, className = "facts") {
  return h(
    "dl",
    { class: className },
    pairs
      .filter((pair) => pair)
      .map(([term, value, extra]) =>
        h("div", { class: "fact", ...extra }, h("dt", { text: term }), h("dd", {}, value)),
      ),
  );
}

/**
 * A figure tile: a label, a big number, and a note under it. `raw` is the API's value
 * behind the words (data-value, "null" for none), so that what is shown can be checked.
 */
export function figure(label, value, { note, figureId, seconds, raw, tone } = {}) {
  return h(
    "div",
    { class: ["figure", tone && `tone-${tone}`], "data-figure": figureId },
    h("dt", { text: label }),
    h("dd", { class: "figure-value", "data-seconds": seconds ?? undefined, "data-value": raw === undefined ? undefined : String(raw) }, value),
    // The note is a second definition of the same term: a <dl> holds only terms and definitions.
    note ? h("dd", { class: "figure-note", text: note }) : null,
  );
}

export function badge(text, tone = "neutral", title) {
  return h("span", { class: `badge badge-${tone}`, title, text });
}

export function spinner(label = "Loading") {
  return h("div", { class: "loading", role: "status" }, h("span", { class: "spin", "aria-hidden": "true" }), label + "…");
}

export function errorBox(message, hint) {
  return h(
    "div",
    { class: "notice notice-error", role: "alert" },
    h("p", { class: "notice-title", text: message }),
    hint ? h("p", { text: hint }) : null,
  );
}

/** A refusal in words (refusals.js's `explain`): what happened, the server's detail, what next. */
export function refusalNotice({ title, detail, next }) {
  return h(
    "div",
    { class: "notice notice-error", role: "alert" },
    h("p", { class: "notice-title", text: title }),
    detail ? h("p", { class: "muted", text: detail }) : null,
    next ? h("p", { text: next }) : null,
  );
}

/**
 * The one record a page shows, read by `read`; when it cannot be read, or the token does not
 * cover it (`missing`: the message and its hint), `target` says so and the answer is null.
 */
export async function readOrSay(target, read, unreadable, missing) {
  let found;
  try {
    found = await read();
  } catch (error) {
    fill(target, errorBox(unreadable, error.message));
    return null;
  }
  if (!found) {
    fill(target, errorBox(...missing));
    return null;
  }
  return found;
}

/**
 * Lets `box` (a .scroller: it scrolls sideways) be scrolled with the keyboard while its
 * content is wider than it: then, and only then, it is a named region in the tab order. A
 * narrow screen or a zoomed page scrolls the box, never the page.
 */
function scrollsSideways(box, label) {
  const check = () => {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls === box.hasAttribute("tabindex")) return;
    if (scrolls) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", `${label} (scrolls sideways)`);
    } else {
      for (const name of ["tabindex", "role", "aria-label"]) box.removeAttribute(name);
    }
  };
  const observer = new ResizeObserver(check);
  observer.observe(box);
  // Its content changes size too (a table read again), not only the box.
  new MutationObserver(() => {
    for (const child of box.children) observer.observe(child);
    check();
  }).observe(box, { childList: true });
  for (const child of box.children) observer.observe(child);
  return box;
}

/** A table in a box of its own that scrolls sideways when the table is wider than the page. */
export function wide(table) {
  const label = table.getAttribute("aria-label") || table.querySelector("caption")?.textContent || "Table";
  return scrollsSideways(h("div", { class: "scroller" }, table), label);
}
