// The last hour a minute at a time (GET /v1/activity, GET /v1/orgs/{org}/activity,
// docs/adr/0122): searches, the degraded share, the sweep's lag age and its throughput,
// each a small SVG chart built from DOM nodes (no library, nothing inline the CSP refuses).
import { api } from "./api.js";
import { errorBox, h, replace, seconds } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 240;
const HEIGHT = 56;

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  for (const child of children) if (child) element.append(child);
  return element;
}

const percent = (share) => (share === null || share === undefined ? "none" : `${(share * 100).toFixed(1)} %`);

/** The charts of one trend: what each shows, its headline figure and the values per minute. */
function charts(trend) {
  const m = trend.minutes;
  return [
    ["searches", "History searches", `${trend.searches} in the hour`, m.map((x) => x.searches), "bars"],
    ["degraded", "Degraded share", percent(trend.degraded_share), m.map((x) => x.degraded_share), "line"],
    ["lag", "Sweep lag age", seconds(trend.lag_age_seconds), m.map((x) => x.lag_age_seconds), "line"],
    ["throughput", "Windows embedded", `${trend.windows_embedded} in the hour`, m.map((x) => x.windows_embedded), "bars"],
  ];
}

function chart(kind, values, label) {
  const step = WIDTH / values.length;
  const top = Math.max(...values.filter((v) => v !== null), kind === "line" && label === "Degraded share" ? 1 : 0) || 1;
  const y = (v) => HEIGHT - 2 - (v / top) * (HEIGHT - 4);
  const shapes = [];
  if (kind === "bars") {
    values.forEach((v, i) => {
      if (v) shapes.push(svg("rect", { class: "bar", x: i * step + 0.5, y: y(v), width: Math.max(step - 1, 1), height: HEIGHT - 2 - y(v) }));
    });
  } else {
    // Minutes without a value break the line; a lone point is a dot.
    let run = [];
    const flush = () => {
      if (run.length > 1) shapes.push(svg("polyline", { class: "line", points: run.map(([x, v]) => `${x},${y(v)}`).join(" ") }));
      else if (run.length === 1) shapes.push(svg("circle", { class: "dot", cx: run[0][0], cy: y(run[0][1]), r: 2 }));
      run = [];
    };
    values.forEach((v, i) => (v === null ? flush() : run.push([i * step + step / 2, v])));
    flush();
  }
  return svg(
    "svg",
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT, role: "img", "aria-label": label },
    svg("line", { class: "axis", x1: 0, y1: HEIGHT - 1, x2: WIDTH, y2: HEIGHT - 1 }),
    ...shapes,
  );
}

/** The trend's four charts; each carries its values (`data-values`, empty: no value). */
export function trendView(trend) {
  return h(
    "div",
    { class: "trends" },
    charts(trend).map(([id, label, headline, values, kind]) =>
      h(
        "figure",
        { class: "trend", "data-testid": `trend-${id}`, "data-values": values.map((v) => (v === null ? "" : v)).join(",") },
        h("figcaption", {}, h("span", {}, label), h("strong", {}, headline)),
        chart(kind, values, label),
      ),
    ),
    h("p", { class: "hint trend-axis" }, "The last 60 minutes, the current one on the right; every replica's figures."),
  );
}

/** Reads the trend into `card` (its heading kept); the old charts stay until the answer. */
export async function loadTrend(card, path, heading) {
  try {
    const trend = await api("GET", path);
    replace(card, h("h3", {}, heading), trendView(trend));
  } catch (error) {
    replace(card, h("h3", {}, heading), errorBox(error));
  }
}
