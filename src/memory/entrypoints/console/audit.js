// Audit log: GET /v1/audit, newest first, a page at a time (needs an admin key for every org).
import { api } from "./api.js";
import { errorBox, field, h, isoFromLocal, replace, table, when } from "./dom.js";
import { may, notAllowed, ownKey } from "./key.js";

const PAGE_SIZE = 25;

export async function render(container) {
  const own = await ownKey();
  if (!may(own, "auditLog")) {
    replace(
      container,
      h("div", { class: "title" }, h("h2", {}, "Audit log")),
      notAllowed(own, "Reading the audit log", "the admin scope on a key for every org", "audit-not-allowed"),
    );
    return;
  }
  const org = h("input", { id: "audit-org", autocomplete: "off", placeholder: "all orgs" });
  const since = h("input", { id: "audit-since", type: "datetime-local", step: 1 });
  const until = h("input", { id: "audit-until", type: "datetime-local", step: 1 });
  const out = h("div", { class: "results", "data-testid": "audit-results" });
  let filters = {};
  let cursors = [];

  async function load(cursor) {
    replace(out, h("p", { class: "loading" }, "Loading…"));
    try {
      const page = await api("GET", "/v1/audit", { query: { ...filters, limit: PAGE_SIZE, cursor } });
      replace(out, entries(page, cursors.length + 1, {
        next: page.next_cursor ? () => { cursors.push(cursor); load(page.next_cursor); } : null,
        previous: cursors.length ? () => load(cursors.pop()) : null,
      }));
    } catch (error) {
      replace(out, errorBox(error));
    }
  }

  const form = h(
    "form",
    { class: "playground", autocomplete: "off" },
    field("Org", org),
    field("Since", since),
    field("Until", until),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "audit-load" }, "Show")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    filters = { org_id: org.value.trim(), since: isoFromLocal(since.value), until: isoFromLocal(until.value) };
    cursors = [];
    load(undefined);
  });
  replace(container, h("div", { class: "title" }, h("h2", {}, "Audit log")), form, out);
  await load(undefined);
}

function entries(page, number, { next, previous }) {
  return [
    h("p", { class: "explain" }, `Page ${number}: ${page.entries.length} entries, newest first.`),
    table(
      [
        ["When", (e) => when(e.recorded_at)],
        ["Actor", (e) => [e.actor.name ?? "", " ", e.actor.key_id ? h("code", {}, e.actor.key_id) : ""]],
        ["Action", (e) => h("code", {}, e.action)],
        ["Org", (e) => e.org_id ?? ""],
        ["Target", (e) => json(e.target)],
        ["Before", (e) => json(e.before)],
        ["After", (e) => json(e.after)],
      ],
      page.entries,
      { testid: "audit-entries", empty: "No admin action recorded." },
    ),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", class: "secondary", id: "audit-previous", disabled: !previous, onclick: previous || undefined }, "Newer"),
      h("button", { type: "button", class: "secondary", id: "audit-next", disabled: !next, onclick: next || undefined }, "Older"),
    ),
  ];
}

function json(value) {
  if (value === null || value === undefined) return "";
  return h("code", { class: "json" }, typeof value === "string" ? value : JSON.stringify(value));
}
