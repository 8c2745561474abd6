// History search playground: GET /v1/orgs/{org}/history/search, each hit marked by how it
// was found, and the answer's own explanation when semantic search did not take part.
import { api } from "./api.js";
import { badge, errorBox, field, h, isoFromLocal, replace, table, when } from "./dom.js";
import { may, notAllowed, ownKey } from "./key.js";
import { knownOrgs } from "./orgs.js";

export async function render(container, args) {
  const own = await ownKey();
  if (!may(own, "searchHistory")) {
    replace(
      container,
      h("div", { class: "title" }, h("h2", {}, "History search")),
      notAllowed(own, "Searching history", "the history:read scope", "history-not-allowed"),
    );
    return;
  }
  // A key for one org searches that org: it is filled in.
  const org = h("input", { id: "history-org", required: true, list: "history-orgs", value: args[0] || (own && own.org_id) || "", autocomplete: "off" });
  const query = h("input", { id: "history-query", required: true, maxlength: 1000, autocomplete: "off" });
  const since = h("input", { id: "history-since", type: "datetime-local", step: 1 });
  const until = h("input", { id: "history-until", type: "datetime-local", step: 1 });
  const limit = h("input", { id: "history-limit", type: "number", min: 1, max: 100, value: 20 });
  const minRelevance = h("input", { id: "history-min-relevance", type: "number", min: 0, max: 10, step: 0.25 });
  const orgList = h("datalist", { id: "history-orgs" });
  const out = h("div", { class: "results", "data-testid": "history-results" });
  const form = h(
    "form",
    { class: "playground", autocomplete: "off" },
    field("Org", org),
    field("Query", query, "Full-text, and semantic when the org has it on"),
    field("Since", since, "Inclusive, your local time"),
    field("Until", until, "Exclusive; empty for up to now"),
    field("Limit", limit),
    field("Min relevance", minRelevance, "Empty: the default floor; 0 keeps every semantic hit"),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "history-search" }, "Search")),
    orgList,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const orgId = org.value.trim();
    if (!may(own, "searchHistory", orgId)) {
      replace(out, notAllowed(own, `Searching ${orgId}'s history`, `history:read for ${orgId}`, "history-not-allowed"));
      return;
    }
    replace(out, h("p", { class: "loading" }, "Searching…"));
    try {
      const answer = await api("GET", `/v1/orgs/${encodeURIComponent(orgId)}/history/search`, {
        query: {
          q: query.value,
          limit: limit.value,
          since: isoFromLocal(since.value),
          until: isoFromLocal(until.value),
          min_relevance: minRelevance.value.trim() || undefined,
        },
      });
      replace(out, results(answer));
    } catch (error) {
      replace(out, errorBox(error));
    }
  });
  replace(container, h("div", { class: "title" }, h("h2", {}, "History search")), form, out);
  for (const id of await knownOrgs()) orgList.append(h("option", { value: id }));
}

function results(answer) {
  return [
    h("div", { class: "explain", "data-testid": "history-explain" }, explain(answer)),
    table(
      [
        ["Matched by", (hit) => (hit.matched_by === "semantic" ? badge("semantic", "sem") : badge("full-text", "fts")), "matched"],
        ["Similarity", (hit) => (hit.similarity === null || hit.similarity === undefined ? "" : hit.similarity.toFixed(4)), "num similarity"],
        ["Relevance", (hit) => (hit.relevance === null || hit.relevance === undefined ? "" : hit.relevance.toFixed(2)), "num relevance"],
        ["When", (hit) => when(hit.occurred_at)],
        ["Channel", (hit) => `${hit.provider}/${hit.channel_id}`],
        ["Sender", (hit) => hit.sender],
        ["Text", (hit) => h("span", { class: "text" }, hit.text)],
        ["Window", (hit) => (hit.window_id ? h("code", { title: hit.window_id }, hit.window_id.slice(0, 8)) : ""), "window"],
      ],
      answer.results,
      { testid: "history-hits", empty: "No messages matched." },
    ),
  ];
}

/** What the answer says about itself: the semantic state, and why an answer may be empty. */
function explain(answer) {
  const lines = [];
  if (answer.semantic === "on") {
    lines.push(h("p", {}, badge("semantic on", "good"), " Full-text and semantic search with ", h("code", {}, answer.model || "?"), "."));
    if (answer.pending_windows) {
      lines.push(h("p", {}, `${answer.pending_windows} conversation windows of this org still wait for the sweep; their messages are found by full-text only until then.`));
    }
  } else if (answer.semantic === "off") {
    const off = answer.semantic_off_by;
    const why = !off
      ? "semantic search is off for this org"
      : off.layer === "org"
        ? off.default
          ? `the flag ${off.flag} is on only for the orgs that opt in, and this org has not`
          : `the flag ${off.flag} is turned off for this org`
        : `the flag ${off.flag} is off globally (default ${off.default ? "on" : "off"}) and this org has no setting of its own`;
    lines.push(h("p", {}, badge("semantic off", "muted"), ` Full-text only: ${why}.`));
  } else if (answer.semantic === "degraded") {
    lines.push(
      h(
        "p",
        { "data-testid": "history-degraded" },
        badge("degraded", "bad"),
        " The query could not be embedded in time or the model failed: these are full-text results only. ",
        h("strong", {}, "Search again in a moment"),
        " — a model that was busy or still starting usually answers the next query in time.",
      ),
    );
  }
  if (!answer.org_known) {
    lines.push(h("p", {}, "This org has never ingested a message (or was erased): there is nothing to find."));
  }
  lines.push(h("p", { class: "muted" }, `${answer.results.length} results.`));
  return lines;
}
