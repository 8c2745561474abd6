// The console's shell: the page router (the part of the URL after `#`) and the key form.
import { currentKey, forgetKey, setKey } from "./api.js";
import { badge, errorBox, h, loading, replace } from "./dom.js";
import { ask, may, orgsOf, untilExpiry } from "./key.js";
import { still } from "./live.js";
import * as audit from "./audit.js";
import * as history from "./history.js";
import * as orgs from "./orgs.js";
import * as overview from "./overview.js";
import * as policies from "./policies.js";

const PAGES = { overview, orgs, history, policies, audit };
// The operation each page is for, and what it needs in words (the page says the same when
// it is opened with a key that may not use it).
const PAGE_NEEDS = {
  orgs: ["listOrgs", "the history:read scope"],
  history: ["searchHistory", "the history:read scope"],
  policies: ["searchPolicies", "the policies:read scope"],
  audit: ["auditLog", "the admin scope on a key for every org"],
};

function currentRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const name = Object.hasOwn(PAGES, parts[0] || "") ? parts[0] : "overview";
  return { name, args: parts.slice(1) };
}

async function render() {
  const { name, args } = currentRoute();
  for (const link of document.querySelectorAll("#nav a")) {
    const active = link.dataset.page === name;
    link.classList.toggle("active", active);
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  // A fresh container per visit: a slow answer for a page left meanwhile lands in a
  // detached element, never on the page now shown.
  const container = h("div", { class: "page", "data-page": name }, loading());
  replace(document.getElementById("page"), container);
  still(); // a live page says so itself (live.js)
  try {
    await PAGES[name].render(container, args);
  } catch (error) {
    container.append(errorBox(error));
  }
}

// The key form ---------------------------------------------------------------------------

const panel = () => document.getElementById("key-panel");

function refusalMessage(error) {
  if (error.code === "no_key") return "Enter an API key to read this page.";
  if (error.status === 401) {
    return `The service refused this key (401 ${error.code}: ${error.message}). Enter a valid API key.`;
  }
  return `This key may not do that (403 ${error.code}: ${error.message}). Enter another key, or cancel to keep this one.`;
}

function openKeyForm(message) {
  document.getElementById("key-message").textContent = message;
  document.getElementById("key-cancel").hidden = !currentKey();
  panel().hidden = false;
  const input = document.getElementById("key-input");
  input.value = "";
  input.focus();
}

async function renderKeyStatus() {
  const status = document.getElementById("key-status");
  const key = currentKey();
  if (!key) {
    replace(status, h("button", { type: "button", onclick: () => openKeyForm("Enter an API key.") }, "Enter key"));
    markNav(null);
    return;
  }
  const buttons = [
    h("button", { type: "button", class: "secondary", onclick: () => openKeyForm("Enter another API key.") }, "Change key"),
    h("button", { type: "button", class: "secondary", onclick: () => { forgetKey(); openKeyForm("Key forgotten. Enter an API key to read the API."); } }, "Forget key"),
  ];
  replace(status, h("span", { "data-testid": "key-set" }, "Checking the key…"), buttons);
  const { own, problem } = await ask();
  if (currentKey() !== key) return; // another key was entered meanwhile
  if (own) {
    replace(status, identity(own), buttons);
  } else {
    const why = problem ? `${problem.status} ${problem.code}` : "no answer";
    const text = problem && problem.status === 401 ? `Key refused (${why})` : `API key set; who it is is unknown (${why})`;
    replace(status, h("span", { "data-testid": "key-set", title: problem ? problem.message : null }, text), buttons);
  }
  markNav(own);
}

/** The header's "who am I": the key's name and id, its scopes, its org and its expiry. */
function identity(own) {
  const expiry = own.expires_at
    ? h("span", { "data-testid": "key-expiry", title: own.expires_at }, `expires ${untilExpiry(own.expires_at)}`)
    : h("span", { "data-testid": "key-expiry" }, "never expires");
  return h(
    "span",
    { class: "identity", "data-testid": "key-identity" },
    h("strong", { "data-testid": "key-name" }, own.name),
    h("code", { "data-testid": "key-id", title: own.source === "admin_token" ? "MEMORY_ADMIN_TOKEN: configuration, not a stored key" : null }, own.key_id),
    h("span", { class: "scopes", "data-testid": "key-scopes" }, own.scopes.map((scope, i) => [i ? " " : null, badge(scope, scope === "admin" ? "warn" : "muted")])),
    h("span", { "data-testid": "key-orgs" }, orgsOf(own)),
    expiry,
  );
}

/** Pages the key may not use stay in the menu (they say why), marked and explained. */
function markNav(own) {
  for (const link of document.querySelectorAll("#nav a")) {
    const needs = PAGE_NEEDS[link.dataset.page];
    const allowed = !needs || may(own, needs[0]);
    link.classList.toggle("unavailable", !allowed);
    if (allowed) link.removeAttribute("title");
    else link.title = `This key may not use this page: it needs ${needs[1]}.`;
  }
}

function wireKeyForm() {
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("key-input");
    const secret = input.value.trim();
    input.value = "";
    if (!secret) {
      document.getElementById("key-message").textContent = "The key is empty. Paste the secret of an API key.";
      return;
    }
    setKey(secret);
    panel().hidden = true;
    render();
  });
  document.getElementById("key-cancel").addEventListener("click", () => {
    panel().hidden = true;
  });
  addEventListener("memory:key-refused", (event) => openKeyForm(refusalMessage(event.detail)));
  addEventListener("memory:key-changed", renderKeyStatus);
}

wireKeyForm();
renderKeyStatus();
addEventListener("hashchange", render);
render();
