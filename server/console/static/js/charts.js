// Charts: uPlot for time series, and plain bars (text you can read and select, and that a
// screen reader reads as a list) for counts by category.

import uPlot from "../vendor/uPlot.esm.js";
import { h } from "./dom.js";
import { count } from "./format.js";

const COLORS = ["#1f4e79", "#5b9bd5", "#c0504d", "#9a5b00", "#1e7a46"];

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
    scales: { x: { time: true }, count: { range: (u, min, max) => [0, Math.max(5, Math.ceil(max * 1.2))] }, minutes: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.2))] } },
    axes: [
      { stroke: "#6b7687", grid: { stroke: "#eef1f5" } },
      { scale: "count", stroke: "#6b7687", grid: { stroke: "#eef1f5" }, label: "items", size: 50 },
      { scale: "minutes", side: 1, stroke: "#6b7687", grid: { show: false }, label: "minutes", size: 50 },
    ],
    series: [
      { label: "time" },
      ...series.map((s, i) => ({
        label: s.label,
        scale: s.scale,
        stroke: s.color ?? COLORS[i % COLORS.length],
        width: 2,
        dash: s.scale === "minutes" ? [6, 4] : undefined,
        points: { show: false },
        value: (u, v) => (v === null || v === undefined ? "–" : s.scale === "minutes" ? `${v.toFixed(1)} min` : count(v)),
      })),
    ],
  };

  function ensure() {
    if (plot || !node.isConnected) return;
    options.width = Math.max(320, node.clientWidth);
    plot = new uPlot(options, data, node);
    new ResizeObserver(() => plot && plot.setSize({ width: Math.max(320, node.clientWidth), height })).observe(node);
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

/** Bars for counts by category: [{label, value, note}], largest first. */
export function bars(rows, { label, format = count } = {}) {
  const max = Math.max(1, ...rows.map((row) => row.value));
  return h(
    "ul",
    { class: "bars", "aria-label": label },
    rows.map((row) =>
      h(
        "li",
        { class: "bar-row", title: row.note },
        h("span", { class: "bar-label", text: row.label }),
        h("span", { class: "bar-track", "aria-hidden": "true" }, barFill(row.value / max)),
        h("span", { class: "bar-value", text: format(row.value) }),
      ),
    ),
  );
}

function barFill(share) {
  const fill = h("span", { class: "bar-fill" });
  fill.style.width = `${Math.round(share * 100)}%`;
  return fill;
}
