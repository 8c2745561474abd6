// Policy search playground: POST /v1/policies/search with threshold, filters, page size and
// namespace (empty: the key's home, docs/adr/0102); the next page is the answer's
// `next_cursor`, sent back with the same query, filter and namespace. Each hit names its
// namespace (`global`, or `org:<org>` for an org's own policy).
import { ApiError, api } from "./api.js";
import { badge, errorBox, field, h, isoFromLocal, replace, table, when } from "./dom.js";
import { may, notAllowed, ownKey } from "./key.js";

export async function render(container) {
  const own = await ownKey();
  if (!may(own, "searchPolicies")) {
    replace(
      container,
      h("div", { class: "title" }, h("h2", {}, "Policy search")),
      notAllowed(own, "Searching policies", "the policies:read scope", "policies-not-allowed"),
    );
    return;
  }
  const query = h("textarea", { id: "policy-query", required: true, rows: 2, maxlength: 4096 });
  const threshold = h("input", { id: "policy-threshold", inputmode: "decimal", placeholder: "server default", autocomplete: "off" });
  const limit = h("input", { id: "policy-limit", type: "number", min: 1, max: 200, value: 10 });
  const namespace = h("input", {
    id: "policy-namespace",
    placeholder: own.org_id ? `org:${own.org_id}` : "global",
    autocomplete: "off",
  });
  const source = h("input", { id: "policy-source", autocomplete: "off" });
  const title = h("input", { id: "policy-title", autocomplete: "off" });
  const tags = h("input", { id: "policy-tags", placeholder: "travel, expenses", autocomplete: "off" });
  const tagMode = h("select", { id: "policy-tag-mode" }, h("option", { value: "any" }, "any of"), h("option", { value: "all" }, "all of"));
  const metadata = h("textarea", { id: "policy-metadata", rows: 2, placeholder: '{"level": 2}' });
  const after = h("input", { id: "policy-after", type: "datetime-local", step: 1 });
  const before = h("input", { id: "policy-before", type: "datetime-local", step: 1 });
  const out = h("div", { class: "results", "data-testid": "policy-results" });

  // The request of the page shown (its namespace apart: a query parameter), and the cursors
  // of the pages before it (for "Previous").
  let request = null;
  let where = {};
  let cursors = [];

  async function run(cursor) {
    replace(out, h("p", { class: "loading" }, "Searching…"));
    try {
      const body = cursor ? { ...request, cursor } : request;
      const answer = await api("POST", "/v1/policies/search", { body, query: where });
      replace(out, results(answer, cursors.length + 1, {
        next: answer.next_cursor ? () => { cursors.push(cursor); run(answer.next_cursor); } : null,
        previous: cursors.length ? () => run(cursors.pop()) : null,
      }));
    } catch (error) {
      replace(out, errorBox(error));
    }
  }

  const form = h(
    "form",
    { class: "playground", autocomplete: "off" },
    field("Query", query),
    field("Similarity threshold", threshold, "0 to 1; empty for the server's default"),
    field("Page size", limit),
    field("Namespace", namespace, "global or org:<org>; empty for your key's own (an org's also reads the global policies)"),
    h(
      "fieldset",
      {},
      h("legend", {}, "Filters"),
      field("Source", source),
      field("Title", title),
      h("div", { class: "field" }, h("label", { for: tags.id }, "Tags"), h("div", { class: "inline" }, tagMode, tags)),
      field("Metadata", metadata, "A JSON object of exact matches"),
      field("Updated at or after", after),
      field("Updated before", before),
    ),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "policy-search" }, "Search")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      request = searchBody();
      where = { namespace: namespace.value.trim() };
    } catch (error) {
      replace(out, errorBox(error));
      return;
    }
    cursors = [];
    run(null);
  });

  function searchBody() {
    const body = { query: query.value, limit: numberOrText(limit.value) };
    if (threshold.value.trim()) body.similarity_threshold = numberOrText(threshold.value.trim());
    const filter = {};
    if (source.value) filter.source = source.value;
    if (title.value) filter.title = title.value;
    const tagList = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (tagList.length) filter.tags = { [tagMode.value]: tagList };
    if (metadata.value.trim()) {
      try {
        filter.metadata = JSON.parse(metadata.value);
      } catch (cause) {
        throw new ApiError(0, "not_sent", "The request was not sent.", {
          fields: [{ field: "filter.metadata", reason: `not valid JSON (${cause.message})` }],
        });
      }
    }
    const range = {};
    if (after.value) range.gte = isoFromLocal(after.value);
    if (before.value) range.lt = isoFromLocal(before.value);
    if (Object.keys(range).length) filter.timestamp = range;
    if (Object.keys(filter).length) body.filter = filter;
    return body;
  }

  replace(container, h("div", { class: "title" }, h("h2", {}, "Policy search")), form, out);
}

/** A number when the text is one, else the text itself: the server says what is wrong. */
function numberOrText(text) {
  const trimmed = String(text).trim();
  return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
}

function results(answer, page, { next, previous }) {
  return [
    h(
      "p",
      { class: "explain", "data-testid": "policy-explain" },
      `Page ${page}: ${answer.results.length} results at similarity ≥ ${answer.similarity_threshold} with `,
      h("code", {}, answer.model),
      ".",
    ),
    table(
      [
        ["Similarity", (r) => badge(r.similarity.toFixed(4), "sem"), "num similarity"],
        ["Policy", (r) => h("code", {}, r.policy_id)],
        ["Namespace", (r) => r.namespace],
        ["Version", (r) => r.version, "num"],
        ["Title", (r) => r.title ?? ""],
        ["Source", (r) => r.source ?? ""],
        ["Tags", (r) => r.tags.join(", ")],
        ["Updated", (r) => when(r.timestamp)],
      ],
      answer.results,
      { testid: "policy-hits", empty: "No policy reached the threshold." },
    ),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", class: "secondary", id: "policy-previous", disabled: !previous, onclick: previous || undefined }, "Previous page"),
      h("button", { type: "button", class: "secondary", id: "policy-next", disabled: !next, onclick: next || undefined }, "Next page"),
    ),
  ];
}
