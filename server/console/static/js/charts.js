// Charts: uPlot for time series, and plain bars (text you can read and select, and that a
// screen reader reads as a list) for counts by category.

import uPlot from "../vendor/uPlot.esm.js";
import { h } from "./dom.js";
import { count } from "./format.js";

const COLORS = ["#1f4e79", "#5b9bd5", "#c0504d", "#9a5b00", "#1e7a46"];
// As wide as its panel, down to a phone's (360 px less the page's margins).
const MIN_WIDTH = 240;
// The axes' text: the console's muted ink (4.5:1 on white and more).
const AXIS = "#5f6a7b";

/**
 * A live time series. series: [{label, scale: "count" | "minutes", color}]. Returns the
 * node and push(unixSeconds, [values…]), which appends a point and redraws.
 */
export function liveTimeSeries(series, { height = 260, label } = {}) {
  const node = h("div", { class: "chart", role: "img", "aria-label": label });
  const data = [[], ...series.map(() => [])];
  let plot = null;
  const options = {
    width: 600,
    height,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    // One point has no time span, and uPlot stretches it to years (a day in milliseconds,
    // read as seconds): show a minute either side of it instead.
    scales: { x: { time: true, range: (u, min, max) => (min !== null && (u.data?.[0]?.length ?? 0) < 2 ? [min - 60, min + 60] : [min, max]) }, count: { range: (u, min, max) => [0, Math.max(5, Math.ceil(max * 1.2))] }, minutes: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.2))] } },
    axes: [
      { stroke: AXIS, grid: { stroke: "#eef1f5" } },
      { scale: "count", stroke: AXIS, grid: { stroke: "#eef1f5" }, label: "items", size: 50 },
      { scale: "minutes", side: 1, stroke: AXIS, grid: { show: false }, label: "minutes", size: 50 },
    ],
    series: [
      { label: "time" },
      ...series.map((s, i) => ({
        label: s.label,
        scale: s.scale,
        stroke: s.color ?? COLORS[i % COLORS.length],
        width: 2,
        dash: s.scale === "minutes" ? [6, 4] : undefined,
        // uPlot's default: dots while the points are sparse (the first ones), lines after.
        points: { size: 6 },
        value: (u, v) => (v === null || v === undefined ? "–" : s.scale === "minutes" ? `${v.toFixed(1)} min` : count(v)),
      })),
    ],
  };

  function ensure() {
    if (plot || !node.isConnected) return;
    options.width = Math.max(MIN_WIDTH, node.clientWidth);
    plot = new uPlot(options, data, node);
    new ResizeObserver(() => plot && plot.setSize({ width: Math.max(MIN_WIDTH, node.clientWidth), height })).observe(node);
  }

  return {
    node,
    push(time, values) {
      data[0].push(time);
      values.forEach((value, i) => data[i + 1].push(value));
      ensure();
      if (plot) plot.setData(data);
    },
    points: () => data[0].length,
  };
}

/**
 * Bars for counts by category: [{label, value, note, key}], largest first. `key` names a
 * row (data-key) and the bar's value is kept in data-value, for the tests to read. `wide`
 * makes room for values longer than a count ("8 min 11 s").
 */
export function bars(rows, { label, format = count, wide = false } = {}) {
  const max = Math.max(1, ...rows.map((row) => row.value ?? 0));
  return h(
    "ul",
    { class: ["bars", wide && "bars-wide"], "aria-label": label },
    rows.map((row) =>
      h(
        "li",
        { class: "bar-row", title: row.note, "data-key": row.key },
        h("span", { class: "bar-label", text: row.label }),
        h("span", { class: "bar-track", "aria-hidden": "true" }, barFill((row.value ?? 0) / max)),
        h("span", { class: "bar-value", "data-value": String(row.value ?? null), text: format(row.value) }),
      ),
    ),
  );
}

/** A share (0 to 1) as a short bar, for a table cell beside the percentage. */
export function shareBar(share) {
  return h("span", { class: "bar-track bar-track-small", "aria-hidden": "true" }, barFill(share ?? 0));
}

function barFill(share) {
  // A nought shows an empty track: the stub that makes a small share visible would not do.
  const fill = h("span", { class: ["bar-fill", share <= 0 && "bar-fill-none"] });
  fill.style.width = `${Math.round(share * 100)}%`;
  return fill;
}
