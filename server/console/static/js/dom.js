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

/** Replaces a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
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
    h("dd", { "data-seconds": seconds ?? undefined, "data-value": raw === undefined ? undefined : String(raw) }, value),
    note ? h("p", { class: "figure-note", text: note }) : null,
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
