// Building the page from API data: elements and text nodes only, never HTML strings, so chat
// text, policy titles and server messages are shown as text whatever they contain.

/** `h("td", {class: "num"}, "12")`: an element with attributes, listeners (`onclick`) and
 * children (nodes, strings, numbers, nested arrays; null/false/undefined are skipped). */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "value") {
      element.value = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  appendAll(element, children);
  return element;
}

function appendAll(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

export function replace(element, ...children) {
  element.replaceChildren();
  appendAll(element, children);
}

/** A table: `columns` are [heading, row => cell, class?]. */
export function table(columns, rows, { empty = "Nothing to show.", testid } = {}) {
  if (!rows.length) return h("p", { class: "empty", "data-testid": testid }, empty);
  return h(
    "table",
    { "data-testid": testid },
    h("thead", {}, h("tr", {}, columns.map(([heading, , cls]) => h("th", { class: cls }, heading)))),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h("tr", {}, columns.map(([, cell, cls]) => h("td", { class: cls }, cell(row)))),
      ),
    ),
  );
}

/** A definition list from [term, value] pairs (pairs with an undefined value are left out). */
export function facts(pairs, testid) {
  return h(
    "dl",
    { class: "facts", "data-testid": testid },
    pairs.filter(([, value]) => value !== undefined).map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]),
  );
}

/** An API error as the server worded it: status, code, message and each failing field. */
export function errorBox(error) {
  const fields = error.fields || [];
  return h(
    "div",
    { class: "error", role: "alert", "data-testid": "error" },
    h("strong", {}, error.status ? `${error.status} ${error.code}` : error.code || "error"),
    ": ",
    error.message,
    fields.length ? h("ul", {}, fields.map((f) => h("li", {}, h("code", {}, f.field), ": ", f.reason))) : null,
  );
}

export function badge(text, kind) {
  return h("span", { class: `badge ${kind}` }, text);
}

export function yesNo(value, yes = "yes", no = "no") {
  if (value === null || value === undefined) return badge("unknown", "muted");
  return value ? badge(yes, "good") : badge(no, "muted");
}

/** An instant as the browser's local time, with the ISO value in the tooltip. */
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "never");
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

export function seconds(value) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "none");
  if (value < 120) return `${value.toFixed(1)} s`;
  if (value < 7200) return `${(value / 60).toFixed(1)} min`;
  if (value < 172800) return `${(value / 3600).toFixed(1)} h`;
  return `${(value / 86400).toFixed(1)} d`;
}

export function loading(text = "Loading…") {
  return h("p", { class: "loading" }, text);
}

/** A form field: label and input, the input's id taken from `id`. */
export function field(label, input, hint) {
  return h("div", { class: "field" }, h("label", { for: input.id }, label), input, hint ? h("small", {}, hint) : null);
}

/** The value of a datetime-local input as ISO 8601 with an offset (the API needs one), or
 * undefined when empty. */
export function isoFromLocal(value) {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}
