// Auto-refresh of the live pages (the overview, an org's page): every few seconds unless
// paused (docs/adr/0122). The period and the pause are kept in this tab's sessionStorage,
// so a reload, or the refresh a pause held back, never undoes the operator's choice.
import { h, replace } from "./dom.js";

const PAUSED_ITEM = "memory.console.paused";
const PERIOD_ITEM = "memory.console.refreshSeconds";
const PERIODS = [5, 15, 60];
const DEFAULT_PERIOD = 15;

let active = null; // { container, refresh } of the live page on screen
let timer = null;
let refreshes = 0;
let updated = null;

export function paused() {
  return sessionStorage.getItem(PAUSED_ITEM) === "yes";
}

function period() {
  const chosen = Number(sessionStorage.getItem(PERIOD_ITEM));
  return PERIODS.includes(chosen) ? chosen : DEFAULT_PERIOD;
}

/** The page in `container` is live: `refresh()` reads its figures again each period while
 * the page is on screen and the console is not paused. */
export function live(container, refresh) {
  active = { container, refresh };
  updated = new Date();
  restart();
  renderControl();
}

/** A page that is not live was opened: nothing refreshes, the control hides. */
export function still() {
  active = null;
  clearInterval(timer);
  renderControl();
}

function restart() {
  clearInterval(timer);
  timer = setInterval(tick, period() * 1000);
}

async function tick() {
  if (paused() || !active || !active.container.isConnected) return;
  refreshes += 1;
  await active.refresh();
  updated = new Date();
  renderControl();
}

function renderControl() {
  const control = document.getElementById("live-control");
  if (!control) return;
  control.hidden = !active;
  if (!active) return;
  const isPaused = paused();
  const select = h(
    "select",
    { id: "live-period", "aria-label": "Refresh every", onchange: (event) => { sessionStorage.setItem(PERIOD_ITEM, event.target.value); restart(); renderControl(); } },
    PERIODS.map((s) => h("option", { value: String(s), selected: s === period() }, `every ${s} s`)),
  );
  const toggle = h(
    "button",
    { type: "button", id: "live-toggle", class: "secondary", "aria-pressed": isPaused ? "true" : "false", onclick: () => { sessionStorage.setItem(PAUSED_ITEM, isPaused ? "no" : "yes"); renderControl(); } },
    isPaused ? "Resume" : "Pause",
  );
  const state = h(
    "span",
    { "data-testid": "live-state", "data-refreshes": String(refreshes), class: isPaused ? "live-paused" : "live-on" },
    isPaused ? "Paused" : "Live",
    updated ? h("small", {}, ` updated ${updated.toLocaleTimeString()}`) : null,
  );
  replace(control, state, select, toggle);
}
