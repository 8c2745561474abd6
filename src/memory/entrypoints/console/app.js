// The console's shell: the page router (the part of the URL after `#`) and the key form.
import { currentKey, forgetKey, setKey } from "./api.js";
import { errorBox, h, loading, replace } from "./dom.js";
import * as audit from "./audit.js";
import * as history from "./history.js";
import * as orgs from "./orgs.js";
import * as overview from "./overview.js";
import * as policies from "./policies.js";

const PAGES = { overview, orgs, history, policies, audit };

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

function renderKeyStatus() {
  const status = document.getElementById("key-status");
  if (currentKey()) {
    replace(
      status,
      h("span", { "data-testid": "key-set" }, "API key set for this tab"),
      h("button", { type: "button", class: "secondary", onclick: () => openKeyForm("Enter another API key.") }, "Change key"),
      h("button", { type: "button", class: "secondary", onclick: () => { forgetKey(); openKeyForm("Key forgotten. Enter an API key to read the API."); } }, "Forget key"),
    );
  } else {
    replace(status, h("button", { type: "button", onclick: () => openKeyForm("Enter an API key.") }, "Enter key"));
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
