// Who the entered key is and what it may do, from GET /v1/api-keys/self (docs/adr/0083):
// its name, org, scopes, expiry, and the operation ids the service would let it call. Pages
// disable or replace the controls it may not use and say why, instead of letting the
// operator meet a 403. This is advice only: the service still refuses what a key may not do.
import { api, currentKey } from "./api.js";
import { h } from "./dom.js";

let asked = null; // the answer for the key now entered: a promise of {own, problem}
let askedFor = null;

/** `{own, problem}`: the entered key's description, or why there is none (an ApiError: 401
 * for a refused key; both null without a key). Asked once per key. */
export function ask() {
  const key = currentKey();
  if (!key) return Promise.resolve({ own: null, problem: null });
  if (asked === null || askedFor !== key) {
    askedFor = key;
    asked = api("GET", "/v1/api-keys/self").then(
      (own) => ({ own, problem: null }),
      (problem) => {
        // A refused key stays refused; anything else (the database was down) is asked again
        // by the next page.
        if (problem.status !== 401 && askedFor === key) asked = null;
        return { own: null, problem };
      },
    );
  }
  return asked;
}

/** The entered key's own description, asked once per key; null without a key or when the
 * service could not say (then nothing is disabled: the service decides). */
export async function ownKey() {
  return (await ask()).own;
}

addEventListener("memory:key-changed", () => {
  asked = null;
  askedFor = null;
});

/** Whether `own` may call the operation `operationId` (on `orgId`, for an org's operation). */
export function may(own, operationId, orgId) {
  if (!own) return true;
  if (!own.operations.includes(operationId)) return false;
  return orgId === undefined || own.org_id === null || own.org_id === orgId;
}

/** "for every org" / "for org acme". */
export function orgsOf(own) {
  return own.org_id === null ? "for every org" : `for org ${own.org_id}`;
}

/** A sentence on what `own` is: its name, scopes and org. */
export function describe(own) {
  return `This key (${own.name}, ${own.key_id}) has ${own.scopes.join(", ")} ${orgsOf(own)}.`;
}

/** The box shown in place of a control the key may not use: what it needs, what the key
 * has, and how to go on. */
export function notAllowed(own, what, needs, testid) {
  return h(
    "div",
    { class: "not-allowed", role: "note", "data-testid": testid },
    h("strong", {}, `${what} needs ${needs}.`),
    " ",
    describe(own),
    " Use ",
    h("em", {}, "Change key"),
    " above to enter one that may.",
  );
}

/** "in 29 days", "in 5 hours", "expired". */
export function untilExpiry(iso) {
  const left = new Date(iso).getTime() - Date.now();
  if (Number.isNaN(left)) return String(iso);
  if (left <= 0) return "expired";
  const hours = left / 3600000;
  if (hours < 1) return `in ${Math.max(1, Math.round(left / 60000))} min`;
  if (hours < 48) return `in ${Math.round(hours)} h`;
  return `in ${Math.round(hours / 24)} days`;
}
