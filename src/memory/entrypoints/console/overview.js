// Overview: /healthz as it is (models, projector lag, last sweep and purge, database).
import { api, currentKey } from "./api.js";
import { badge, errorBox, facts, h, replace, seconds, table, when, yesNo } from "./dom.js";
import { may, notAllowed, ownKey } from "./key.js";
import { live } from "./live.js";
import { loadTrend } from "./trends.js";

// The overview sums the first page of orgs; the Orgs page lists them all.
const ORGS_AT_A_GLANCE = 200;

export async function render(container) {
  const body = h("div", {}, "Loading…");
  replace(
    container,
    h("div", { class: "title" }, h("h2", {}, "Overview"), h("button", { type: "button", class: "secondary", onclick: () => load(body) }, "Refresh")),
    body,
  );
  live(container, () => load(body));
  await load(body);
}

async function load(body) {
  let health;
  try {
    // 503 still carries the report: which part is down is what an operator wants to see.
    health = await api("GET", "/healthz", { auth: false, accept: [503] });
  } catch (error) {
    replace(body, errorBox(error));
    return;
  }
  const contexts = Object.entries(health.contexts || {});
  replace(
    body,
    h(
      "section",
      { class: "card" },
      h("h3", {}, "Service"),
      facts(
        [
          ["Status", health.status === "ok" ? badge("ok", "good") : badge(health.status, "bad")],
          ["Database", health.database === "ok" ? badge("ok", "good") : h("span", { class: "bad-text" }, health.database)],
          ["Checked", when(new Date().toISOString())],
        ],
        "service",
      ),
    ),
    activityCard(),
    h("section", { class: "card" }, h("h3", {}, "Models"), modelsTable(contexts)),
    h("section", { class: "card", "data-testid": "model-checks" }, h("h3", {}, "Model checks"), modelChecks(health)),
    orgsCard(),
    projectors(contexts),
    sweeps(contexts),
    contexts
      .filter(([, report]) => report.error)
      .map(([name, report]) => h("section", { class: "card" }, h("h3", {}, `${name}: no report`), h("p", { class: "bad-text" }, report.error))),
  );
}

/** The service's last hour (GET /v1/activity: a history:read key for every org). */
function activityCard() {
  const heading = "Last hour";
  const card = h("section", { class: "card", "data-testid": "service-trends" }, h("h3", {}, heading));
  if (!currentKey()) {
    card.append(h("p", { class: "empty" }, "Enter an API key to see the last hour."));
    return card;
  }
  card.append(h("p", { class: "loading" }, "Loading…"));
  ownKey().then((own) => {
    if (may(own, "serviceActivity")) loadTrend(card, "/v1/activity", heading);
    else replace(card, h("h3", {}, heading), notAllowed(own, "The service's last hour", "the history:read scope on a key for every org", "trends-not-allowed"));
  });
  return card;
}

/** The orgs at a glance, from GET /v1/orgs (this needs a key; /healthz does not). */
function orgsCard() {
  const card = h("section", { class: "card", "data-testid": "orgs-summary" }, h("h3", {}, "Orgs"));
  if (!currentKey()) {
    card.append(h("p", { class: "empty" }, "Enter an API key to see the orgs."));
    return card;
  }
  card.append(h("p", { class: "loading" }, "Loading…"));
  ownKey().then((own) => {
    if (may(own, "listOrgs")) loadOrgs(card);
    else replace(card, h("h3", {}, "Orgs"), notAllowed(own, "The orgs summary", "the history:read scope", "orgs-not-allowed"));
  });
  return card;
}

function loadOrgs(card) {
  api("GET", "/v1/orgs", { query: { limit: ORGS_AT_A_GLANCE } }).then(
    (page) => {
      const orgs = page.orgs;
      const lags = orgs.map((o) => o.sweep.max_lag_seconds).filter((lag) => lag !== null);
      const sum = (pick) => orgs.reduce((n, o) => n + pick(o), 0);
      replace(
        card,
        h("h3", {}, "Orgs"),
        facts([
          ["Orgs", page.next_cursor ? `${orgs.length}+` : orgs.length],
          ["Semantic search on", orgs.filter((o) => o.semantic_search).length],
          ["Open windows", sum((o) => o.sweep.open_windows)],
          ["Poisoned windows", sum((o) => o.sweep.poison_windows)],
          ["Largest sweep lag", seconds(lags.length ? Math.max(...lags) : null)],
        ]),
        h("p", {}, h("a", { href: "#/orgs" }, "Every org")),
      );
    },
    (error) => replace(card, h("h3", {}, "Orgs"), errorBox(error)),
  );
}

function modelsTable(contexts) {
  const rows = contexts.filter(([, report]) => report.model).map(([name, report]) => ({ name, ...report.model }));
  return table(
    [
      ["Context", (m) => m.name],
      ["Model", (m) => h("code", {}, m.id)],
      ["Dimensions", (m) => m.dimensions, "num"],
      ["Available", (m) => yesNo(m.available, "available", "unavailable")],
      ["Breaker", (m) => (m.breaker ? breaker(m.breaker) : h("span", { class: "muted" }, "none"))],
      ["Detail", (m) => m.detail || ""],
    ],
    rows,
    { testid: "models", empty: "No context reported a model." },
  );
}

/** Warm-up and the last `memory check` of each active model (docs/rollout.md: the gate). */
function modelChecks(health) {
  const warm = health.warm_up;
  const checks = Object.entries(health.model_checks || {}).filter(([model]) => model !== "error");
  const rows = checks.map(([model, check]) => ({ model, ...check }));
  return [
    h(
      "p",
      {},
      warm && warm.ready
        ? [badge("warm", "good"), ` Models and the Chinese segmenter were warmed in ${seconds(warm.seconds)} before the service said it was ready.`]
        : [badge("warming", "bad"), " The service is still warming its models."],
    ),
    table(
      [
        ["Model", (c) => h("code", {}, c.model)],
        ["Checked", (c) => (c.checked ? when(c.checked_at) : h("span", { class: "bad-text" }, "never: run memory check before turning semantic search on"))],
        ["Passed", (c) => (c.checked ? yesNo(c.passed, "passed", "failed") : "")],
        ["Recall", (c) => (c.checked ? `${c.recall} (cross-lingual ${c.cross_lingual_recall})` : ""), "num"],
        ["Off-topic / query", (c) => (c.precision ? `${c.precision.off_topic_by_relevance} (unfiltered ${c.precision.off_topic_by_similarity})` : ""), "num"],
        ["No-answer empty", (c) => (c.precision ? c.precision.empty_share_by_relevance : ""), "num"],
      ],
      rows,
      { testid: "model-check-table", empty: "No model reported." },
    ),
  ];
}

function breaker(state) {
  const name = state.state || "unknown";
  return h(
    "span",
    {},
    badge(name, name === "closed" ? "good" : "bad"),
    state.consecutive_failures ? ` ${state.consecutive_failures} failures in a row` : "",
    state.probe_in_seconds !== undefined ? `, next probe in ${state.probe_in_seconds} s` : "",
  );
}

function projectors(contexts) {
  const rows = contexts.filter(([, report]) => report.projector).map(([name, report]) => ({ name, ...report.projector, mode: report.search_mode }));
  if (!rows.length) return null;
  return h(
    "section",
    { class: "card" },
    h("h3", {}, "Policy projector"),
    table(
      [
        ["Context", (p) => p.name],
        ["Model", (p) => h("code", {}, p.model)],
        ["Role", (p) => p.role],
        ["Here", (p) => yesNo(p.running_here, "running here", "elsewhere")],
        ["Position", (p) => p.position ?? "none", "num"],
        ["Head", (p) => p.head ?? "none", "num"],
        ["Lag (events)", (p) => lagBadge(p.lag_events), "num"],
        ["Search", (p) => p.mode ?? ""],
      ],
      rows,
      { testid: "projectors" },
    ),
  );
}

/** How a pass ended (`ok`, `stalled`, `interrupted`, `failed` with the error's class). */
function outcome(run) {
  if (run.outcome === undefined) return undefined;
  return h(
    "span",
    { "data-testid": "outcome" },
    badge(run.outcome, run.outcome === "ok" ? "good" : run.outcome === "interrupted" ? "warn" : "bad"),
    run.error ? ` ${run.error}` : "",
  );
}

function lagBadge(events) {
  if (events === null || events === undefined) return badge("unknown", "muted");
  return badge(String(events), events === 0 ? "good" : "warn");
}

function sweeps(contexts) {
  const sections = [];
  for (const [name, report] of contexts) {
    if (!("sweep" in report) && !("purge" in report)) continue;
    const last = report.sweep && report.sweep.last_run;
    const purge = report.purge && report.purge.last_run;
    const sweeper = report.sweeper || {};
    sections.push(
      h(
        "section",
        { class: "card" },
        h("h3", {}, `${name}: last sweep`),
        last
          ? facts(
              [
                ["Outcome", outcome(last)],
                ["Finished", when(last.finished_at)],
                ["Took", seconds(last.seconds)],
                ["Trigger", last.trigger ?? ""],
                ["Org", last.org_id ?? "all orgs"],
                ["Windows embedded", last.windows_embedded],
                ["Windows skipped", last.windows_skipped],
                ["Windows open", last.windows_open],
                ["Windows poisoned", last.windows_poisoned],
                ["Partitions", last.partitions],
                ["Partitions stalled", last.partitions_stalled],
                ["Partitions busy elsewhere", last.partitions_busy],
              ],
              "last-sweep",
            )
          : h("p", { class: "empty", "data-testid": "last-sweep" }, "No sweep pass has finished in this process yet."),
        h("h4", {}, "This replica's sweeper"),
        facts(
          [
            ["Ingest listener", sweeper.ingest_listener],
            ["Background pass running", sweeper.background_pass_running === undefined ? undefined : yesNo(sweeper.background_pass_running)],
            ["Passes", sweeper.passes ? Object.entries(sweeper.passes).map(([t, n]) => `${t}: ${n}`).join(", ") || "none" : undefined],
            ["Windows embedded since start", sweeper.windows_embedded_total],
          ],
          "sweeper",
        ),
        h("h4", {}, "Last purge"),
        purge
          ? facts(
              [
                ["Outcome", outcome(purge)],
                ["Finished", when(purge.finished_at)],
                ["Orgs", purge.orgs],
                ["Events deleted", purge.events_deleted],
                ["Embeddings deleted", purge.embeddings_deleted],
              ],
              "last-purge",
            )
          : h("p", { class: "empty" }, "No purge has finished in this process yet."),
      ),
    );
  }
  return sections;
}
