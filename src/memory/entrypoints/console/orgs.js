// Orgs: the directory with the global flag states, settable by a key that may (an admin
// key for every org), after the operator confirms what the new state does to every org; an
// org's flag layers, retention and sweep partitions (watermark, lag, poisoned windows), with
// its flags and retention editable by a key that may change them (an admin key for the org);
// other keys see why the controls are off.
import { api } from "./api.js";
import { badge, errorBox, facts, field, h, replace, seconds, table, when, yesNo } from "./dom.js";
import { may, notAllowed, ownKey } from "./key.js";
import { live } from "./live.js";
import { loadTrend } from "./trends.js";

const DIRECTORY_PAGE = 50;
// Partitions per page of an org's sweep status (the route's default; its maximum is 200).
const PARTITION_PAGE = 50;

/** The org ids this key may see (the first page of GET /v1/orgs), for other pages' pickers;
 * none when the key may not list them. */
export async function knownOrgs() {
  try {
    const page = await api("GET", "/v1/orgs", { query: { limit: DIRECTORY_PAGE } });
    return page.orgs.map((org) => org.org_id);
  } catch {
    return [];
  }
}

export async function render(container, args) {
  const own = await ownKey();
  if (args.length) {
    await renderOrg(container, args[0], own);
    return;
  }
  if (!may(own, "listOrgs")) {
    replace(
      container,
      h("div", { class: "title" }, h("h2", {}, "Orgs")),
      notAllowed(own, "Listing orgs", "the history:read scope", "orgs-not-allowed"),
    );
    return;
  }
  const prefix = h("input", { id: "orgs-prefix", autocomplete: "off", placeholder: "all" });
  const orgId = h("input", { id: "org-id", autocomplete: "off", placeholder: "acme" });
  const out = h("div", { class: "results", "data-testid": "orgs-results" });
  let cursors = [];
  let filter = "";
  let shownCursor;

  async function load(cursor) {
    shownCursor = cursor;
    replace(out, h("p", { class: "loading" }, "Loading…"));
    try {
      const page = await api("GET", "/v1/orgs", { query: { limit: DIRECTORY_PAGE, prefix: filter, cursor } });
      replace(out, directory(page, cursors.length + 1, {
        next: page.next_cursor ? () => { cursors.push(cursor); load(page.next_cursor); } : null,
        previous: cursors.length ? () => load(cursors.pop()) : null,
      }));
    } catch (error) {
      replace(out, errorBox(error));
    }
  }

  const open = h(
    "form",
    { class: "playground", autocomplete: "off" },
    field("Open an org by its id", orgId),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "org-open" }, "Open")),
  );
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    if (orgId.value.trim()) location.hash = `#/orgs/${encodeURIComponent(orgId.value.trim())}`;
  });

  const form = h(
    "form",
    { class: "playground", autocomplete: "off" },
    field("Org id starts with", prefix),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "orgs-filter" }, "List")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    filter = prefix.value.trim();
    cursors = [];
    load(undefined);
  });
  const flagsBox = h("section", { class: "card", "data-testid": "global-flags" });
  replace(container, h("div", { class: "title" }, h("h2", {}, "Orgs")), flagsBox, open, form, out);
  // A new global state changes what the directory shows for every org: its page is read again.
  await Promise.all([load(undefined), globalFlags(flagsBox, own, () => load(shownCursor))]);
}

// What each global state does, said before the operator confirms it (docs/adr/0131).
const GLOBAL_STATES = {
  off: "off for every org, including the orgs that turned it on",
  on: "on for every org that has not turned it off, including orgs created later",
  opt_in: "on only for the orgs that turned it on; every other org, present or future, has it off",
};
const STATE_NAMES = { off: "off", on: "on", opt_in: "opt-in" };

/** The global flags (GET /v1/feature-flags) with, for a key that may set them, a state
 * picker whose change takes effect only once confirmed; `changed` runs after a change. */
async function globalFlags(box, own, changed) {
  const heading = h("h3", {}, "Global feature flags");
  if (!may(own, "listGlobalFlags")) {
    replace(box, heading, notAllowed(own, "Reading the global flags", "the history:read scope", "global-flags-not-allowed"));
    return;
  }
  replace(box, heading, h("p", { class: "loading" }, "Loading…"));
  let answer;
  try {
    answer = await api("GET", "/v1/feature-flags");
  } catch (error) {
    replace(box, heading, errorBox(error));
    return;
  }
  const canSet = may(own, "setGlobalFlag");
  const message = h("div", { "data-testid": "global-flag-message" });
  const reload = async () => {
    await globalFlags(box, own, changed);
    await changed();
  };
  replace(
    box,
    heading,
    canSet ? null : notAllowed(own, "Changing a global flag", "the admin scope on a key for every org", "global-flags-not-allowed"),
    table(
      [
        ["Flag", (f) => h("code", {}, f.flag)],
        ["State", (f) => h("span", { "data-testid": `global-state-${f.flag}` }, stateBadge(f.state), f.set ? "" : h("small", {}, " (default)"))],
        ["Change for every org", (f) => stateControl(f, canSet, message, reload)],
      ],
      answer.flags,
      { testid: "global-flag-list", empty: "No flags." },
    ),
    message,
  );
}

function stateBadge(state) {
  return state === "opt_in" ? badge("opt-in", "muted") : yesNo(state === "on", "on", "off");
}

function stateControl(flag, canSet, message, reload) {
  const why = canSet ? null : "Needs the admin scope on a key for every org";
  const picker = h(
    "select",
    { "data-testid": `global-pick-${flag.flag}`, "aria-label": `New global state of ${flag.flag}`, disabled: !canSet, title: why },
    Object.keys(GLOBAL_STATES).map((state) => h("option", { value: state }, STATE_NAMES[state])),
  );
  picker.value = flag.state;
  const ask = h("button", { type: "button", class: "secondary", "data-testid": `global-change-${flag.flag}`, disabled: !canSet, title: why }, "Change…");
  ask.addEventListener("click", () => {
    const state = picker.value;
    if (state === flag.state) {
      replace(message, h("p", { class: "hint" }, `${flag.flag} is ${STATE_NAMES[state]} already: pick another state.`));
      return;
    }
    replace(message, confirmation(flag.flag, state, message, reload));
  });
  return h("span", { class: "inline" }, picker, ask);
}

function confirmation(flag, state, message, reload) {
  async function confirmed() {
    replace(message, h("p", { class: "loading" }, "Saving…"));
    try {
      await api("PUT", `/v1/feature-flags/${encodeURIComponent(flag)}`, { body: { state } });
    } catch (error) {
      replace(message, errorBox(error));
      return;
    }
    await reload();
  }
  return h(
    "div",
    { class: "not-allowed", role: "alertdialog", "aria-label": "Confirm the new global state", "data-testid": "global-confirm" },
    h("strong", {}, `Set ${flag} to ${STATE_NAMES[state]}?`),
    ` It will be ${GLOBAL_STATES[state]}. The change is recorded in the audit log.`,
    h(
      "div",
      { class: "inline" },
      h("button", { type: "button", "data-testid": "global-confirm-yes", onclick: confirmed }, `Set ${STATE_NAMES[state]}`),
      h("button", { type: "button", class: "secondary", "data-testid": "global-confirm-no", onclick: () => replace(message) }, "Cancel"),
    ),
  );
}

function directory(page, number, { next, previous }) {
  return [
    h("p", { class: "explain" }, `Page ${number}: ${page.orgs.length} orgs.`),
    table(
      [
        ["Org", (o) => h("a", { href: `#/orgs/${encodeURIComponent(o.org_id)}` }, o.org_id)],
        ["Semantic search", (o) => [yesNo(o.semantic_search, "on", "off"), " ", h("small", {}, flagSource(o.semantic_search_by))]],
        ["Retention", (o) => [`${o.retention.days} days`, o.retention.default ? h("small", {}, " (default)") : ""]],
        ["Partitions", (o) => o.partitions, "num"],
        ["Messages", (o) => o.messages, "num"],
        ["Open windows", (o) => o.sweep.open_windows, "num"],
        ["Poisoned", (o) => poisonBadge(o.sweep.poison_windows, o.sweep.poison_events), "num"],
        ["Sweep lag", (o) => seconds(o.sweep.max_lag_seconds)],
        ["Last swept", (o) => when(o.sweep.last_swept_at)],
      ],
      page.orgs,
      { testid: "orgs", empty: "No org has ingested chat yet." },
    ),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", class: "secondary", id: "orgs-previous", disabled: !previous, onclick: previous || undefined }, "Previous page"),
      h("button", { type: "button", class: "secondary", id: "orgs-next", disabled: !next, onclick: next || undefined }, "Next page"),
    ),
  ];
}

function flagSource(by) {
  if (!by) return "";
  if (by.layer === "org") return by.default ? "not opted in (global opt-in)" : "set for this org";
  return `global ${by.default ? "default" : "setting"}`;
}

function poisonBadge(windows, events) {
  if (!windows && !events) return "0";
  return badge(`${windows} windows, ${events} events`, "bad");
}

async function renderOrg(container, orgId, own) {
  const path = `/v1/orgs/${encodeURIComponent(orgId)}`;
  const heading = h("div", { class: "title" }, h("h2", {}, h("a", { href: "#/orgs" }, "Orgs"), " / ", h("span", { "data-testid": "org-title" }, orgId)));
  if (!may(own, "listOrgFlags", orgId)) {
    replace(container, heading, notAllowed(own, `Reading ${orgId}`, `history:read for ${orgId}`, "org-not-allowed"));
    return;
  }
  const canFlag = may(own, "setOrgFlag", orgId);
  const canClear = may(own, "clearOrgFlag", orgId);
  const canRetain = may(own, "setRetention", orgId);
  const summaryBox = h("section", { class: "card", "data-testid": "org-summary" });
  const flagsBox = h("section", { class: "card", "data-testid": "org-flags" });
  const retentionBox = h("section", { class: "card", "data-testid": "org-retention" });
  const sweepBox = h("section", { class: "card", "data-testid": "org-sweep" });
  const trendsBox = h("section", { class: "card", "data-testid": "org-trends" }, h("h3", {}, "Last hour"), h("p", { class: "loading" }, "Loading…"));
  replace(
    container,
    heading,
    h(
      "p",
      { class: "hint" },
      may(own, "searchHistory", orgId)
        ? h("a", { href: `#/history/${encodeURIComponent(orgId)}`, "data-testid": "org-history-link" }, "Search this org's history")
        : null,
    ),
    summaryBox,
    trendsBox,
    flagsBox,
    retentionBox,
    sweepBox,
  );

  async function loadSummary(quiet = false) {
    if (!quiet) replace(summaryBox, h("h3", {}, "Summary"), h("p", { class: "loading" }, "Loading…"));
    try {
      // The directory's entry for this org (its listing is by prefix; the first page that
      // starts with the id holds it when it exists).
      const page = await api("GET", "/v1/orgs", { query: { prefix: orgId, limit: DIRECTORY_PAGE } });
      const org = page.orgs.find((o) => o.org_id === orgId);
      replace(
        summaryBox,
        h("h3", {}, "Summary"),
        org
          ? facts([
              ["Messages", org.messages],
              ["Partitions", org.partitions],
              ["Open windows", h("span", { "data-testid": "open-windows" }, String(org.sweep.open_windows))],
              ["Poisoned", poisonBadge(org.sweep.poison_windows, org.sweep.poison_events)],
              ["Sweep lag", seconds(org.sweep.max_lag_seconds)],
              ["Last embedded", when(org.sweep.last_embedded_at)],
              ["Last swept", when(org.sweep.last_swept_at)],
            ])
          : h("p", { class: "empty" }, "The service has no chat for this org."),
      );
    } catch (error) {
      replace(summaryBox, h("h3", {}, "Summary"), errorBox(error));
    }
  }

  async function loadFlags() {
    replace(flagsBox, h("h3", {}, "Feature flags"), h("p", { class: "loading" }, "Loading…"));
    try {
      const answer = await api("GET", `${path}/feature-flags`);
      replace(flagsBox, h("h3", {}, "Feature flags"), flagsView(answer));
    } catch (error) {
      replace(flagsBox, h("h3", {}, "Feature flags"), errorBox(error));
    }
  }

  function flagsView(answer) {
    const message = h("div", { "data-testid": "flag-message" });
    async function change(flag, enabled) {
      replace(message, h("p", { class: "loading" }, "Saving…"));
      try {
        const url = `${path}/feature-flags/${encodeURIComponent(flag)}`;
        if (enabled === null) await api("DELETE", url);
        else await api("PUT", url, { body: { enabled } });
        await Promise.all([loadFlags(), loadSummary()]);
      } catch (error) {
        replace(message, errorBox(error));
      }
    }
    const locked = !canFlag && !canClear;
    const why = `Needs the admin scope for ${orgId}`;
    return [
      facts([["Semantic search", h("span", { "data-testid": "semantic-search" }, yesNo(answer.semantic_search, "on", "off"))]]),
      locked ? notAllowed(own, "Changing this org's flags", `the admin scope for ${orgId}`, "flags-not-allowed") : null,
      table(
        [
          ["Flag", (f) => h("code", {}, f.flag)],
          ["Global", (f) => h("span", { "data-testid": `global-${f.flag}` }, f.global_state === "opt_in" ? badge("opt-in", "muted") : yesNo(f.global, "on", "off"))],
          ["This org", (f) => (f.org === null ? badge(f.global_state === "opt_in" ? "not opted in" : "not set", "muted") : yesNo(f.org, "on", "off"))],
          ["Effective", (f) => h("span", { "data-testid": `effective-${f.flag}` }, yesNo(f.effective, "on", "off"))],
          [
            "Change for this org",
            (f) =>
              h(
                "span",
                { class: "inline" },
                h("button", { type: "button", class: "secondary", "data-testid": `flag-on-${f.flag}`, disabled: !canFlag || f.org === true, title: canFlag ? null : why, onclick: () => change(f.flag, true) }, "On"),
                h("button", { type: "button", class: "secondary", "data-testid": `flag-off-${f.flag}`, disabled: !canFlag || f.org === false, title: canFlag ? null : why, onclick: () => change(f.flag, false) }, "Off"),
                h("button", { type: "button", class: "secondary", "data-testid": `flag-clear-${f.flag}`, disabled: !canClear || f.org === null, title: canClear ? null : why, onclick: () => change(f.flag, null) }, "Use global"),
              ),
          ],
        ],
        answer.flags,
        { testid: "flags", empty: "No flags." },
      ),
      message,
    ];
  }

  async function loadRetention() {
    replace(retentionBox, h("h3", {}, "Retention"), h("p", { class: "loading" }, "Loading…"));
    let answer;
    try {
      answer = await api("GET", `${path}/retention`);
    } catch (error) {
      replace(retentionBox, h("h3", {}, "Retention"), errorBox(error));
      return;
    }
    const days = h("input", { id: "retention-days", inputmode: "numeric", value: answer.days, autocomplete: "off" });
    const message = h("div", { "data-testid": "retention-message" });
    const form = h(
      "form",
      { class: "inline-form", autocomplete: "off" },
      field("Days", days),
      h("button", { type: "submit", id: "retention-save" }, "Save"),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      replace(message, h("p", { class: "loading" }, "Saving…"));
      const text = days.value.trim();
      // Sent as typed (a number when it is one): the server's message says what is wrong.
      const value = /^-?\d+$/.test(text) ? Number(text) : text;
      try {
        await api("PUT", `${path}/retention`, { body: { days: value } });
        await loadRetention();
      } catch (error) {
        replace(message, errorBox(error));
      }
    });
    replace(
      retentionBox,
      h("h3", {}, "Retention"),
      facts([
        ["Kept for", h("span", { "data-testid": "retention-days-shown" }, `${answer.days} days`)],
        ["Source", answer.default ? "the service's default" : "set for this org"],
      ]),
      canRetain ? [form, message] : notAllowed(own, "Changing this org's retention", `the admin scope for ${orgId}`, "retention-not-allowed"),
    );
  }

  // The org's partitions a page at a time (GET .../sweep is keyset-paged: an org may have
  // thousands); the cursors of the pages before this one, for "Previous page".
  let sweepCursors = [];
  let sweepCursor;

  async function loadSweep(cursor, quiet = false) {
    sweepCursor = cursor;
    if (!quiet) replace(sweepBox, h("h3", {}, "Sweep"), h("p", { class: "loading" }, "Loading…"));
    try {
      const status = await api("GET", `${path}/sweep`, { query: { limit: PARTITION_PAGE, cursor } });
      replace(sweepBox, h("h3", {}, "Sweep"), sweepView(status, sweepCursors.length + 1, {
        next: status.next_cursor ? () => { sweepCursors.push(cursor); loadSweep(status.next_cursor); } : null,
        previous: sweepCursors.length ? () => loadSweep(sweepCursors.pop()) : null,
      }));
    } catch (error) {
      replace(sweepBox, h("h3", {}, "Sweep"), errorBox(error));
    }
  }

  // Live: the figures refresh (the summary, the last hour, the page of partitions shown);
  // the flags and the retention form, which the operator may be changing, do not.
  const loadTrends = () => loadTrend(trendsBox, `${path}/activity`, "Last hour");
  live(container, () => Promise.all([loadSummary(true), loadTrends(), loadSweep(sweepCursor, true)]));
  await Promise.all([loadSummary(), loadTrends(), loadFlags(), loadRetention(), loadSweep(undefined)]);
}

function sweepView(status, number, { next, previous }) {
  const poisoned = status.partitions.flatMap((p) => p.poison_windows.map((w) => ({ ...w, partition: `${p.provider}/${p.channel_id}` })));
  const poisonEvents = status.partitions.flatMap((p) => p.poison_events.map((e) => ({ ...e, partition: `${p.provider}/${p.channel_id}` })));
  const totals = status.totals;
  const pages = Math.max(1, Math.ceil(totals.partitions / PARTITION_PAGE));
  return [
    facts([
      ["Model", h("code", {}, status.model)],
      ["Semantic search", yesNo(status.semantic_search, "on", "off")],
      ["Partitions", h("span", { "data-testid": "sweep-partitions" }, String(totals.partitions))],
      ["Swept", `${totals.partitions_swept} partitions`],
      ["Embedded", `${totals.windows_embedded} windows`],
      ["Open windows", totals.open_windows],
      ["Poisoned", poisonBadge(totals.poison_windows, totals.poison_events)],
      ["Stalled", totals.partitions_stalled ? badge(`${totals.partitions_stalled} partitions`, "bad") : badge("none", "good")],
      ["Last swept", when(totals.last_swept_at)],
    ]),
    h("p", { class: "explain", "data-testid": "partitions-page" }, `Partitions, page ${number} of ${pages}: ${status.partitions.length} shown.`),
    table(
      [
        ["Partition", (p) => `${p.provider}/${p.channel_id}`],
        ["Watermark", (p) => (p.watermark.position ? when(p.watermark.position.occurred_at) : h("span", { class: "muted" }, "not started"))],
        ["Lag (events)", (p) => badge(String(p.lag.events), p.lag.events === 0 ? "good" : "warn"), "num"],
        ["Oldest closed window waiting", (p) => seconds(p.lag.oldest_closed_window_age_seconds)],
        ["Open windows", (p) => p.open_windows, "num"],
        ["Embedded", (p) => p.windows_embedded, "num"],
        ["Skipped", (p) => p.windows_skipped, "num"],
        ["Poisoned", (p) => (p.poison_windows.length ? badge(String(p.poison_windows.length), "bad") : "0"), "num"],
        ["Stalled", (p) => (p.stalled ? badge(p.last_stall ? p.last_stall.reason : "stalled", "bad") : badge("no", "good"))],
        ["Last advanced", (p) => when(p.last_advanced_at)],
      ],
      status.partitions,
      { testid: "partitions", empty: "This org has no chat partitions yet." },
    ),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", class: "secondary", id: "partitions-previous", disabled: !previous, onclick: previous || undefined }, "Previous page"),
      h("button", { type: "button", class: "secondary", id: "partitions-next", disabled: !next, onclick: next || undefined }, "Next page"),
    ),
    h("h4", {}, "Poisoned windows on this page"),
    table(
      [
        ["Partition", (w) => w.partition],
        ["Window", (w) => h("code", {}, w.window_id)],
        ["Messages", (w) => w.message_count, "num"],
        ["From", (w) => (w.first ? when(w.first.occurred_at) : "")],
        ["To", (w) => (w.last ? when(w.last.occurred_at) : "")],
        ["Reason", (w) => w.reason],
        ["Recorded", (w) => when(w.recorded_at)],
      ],
      poisoned,
      { testid: "poison-windows", empty: "No poisoned windows." },
    ),
    poisonEvents.length
      ? [
          h("h4", {}, "Poisoned events"),
          table(
            [
              ["Partition", (e) => e.partition],
              ["Event", (e) => h("code", {}, e.event_id)],
              ["Reason", (e) => e.reason],
              ["Recorded", (e) => when(e.recorded_at)],
            ],
            poisonEvents,
            { testid: "poison-events" },
          ),
        ]
      : null,
  ];
}
