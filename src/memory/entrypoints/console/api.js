// The console's only way to the service: its /v1 API (and /healthz), with the operator's key.
// The key lives in sessionStorage (this tab only, gone when it closes), never in
// localStorage, a cookie or a URL, and goes out only as `Authorization: Bearer`.

const KEY_ITEM = "memory.console.apiKey";

export function currentKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

export function setKey(secret) {
  sessionStorage.setItem(KEY_ITEM, secret);
  dispatchEvent(new CustomEvent("memory:key-changed"));
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
  dispatchEvent(new CustomEvent("memory:key-changed"));
}

/** An error answer of the API, as `{"error": {"code", "message", "details"}}` carries it. */
export class ApiError extends Error {
  constructor(status, code, message, details = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** Every failing field of a validation error, as [{field, reason}]. */
  get fields() {
    return (this.details && Array.isArray(this.details.fields)) ? this.details.fields : [];
  }
}

/**
 * Calls the API. `query`: query-string parameters (empty ones left out); `body`: sent as
 * JSON; `auth`: send the key (everything under /v1); `accept`: statuses besides 2xx whose
 * body is an answer, not an error (/healthz answers 503 with its report).
 * A 401 or 403 also raises `memory:key-refused`, which opens the key form with the reason.
 */
export async function api(method, path, { query = {}, body, auth = true, accept = [] } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  if (auth) {
    const key = currentKey();
    if (!key) {
      const error = new ApiError(401, "no_key", "Enter an API key to read this page.");
      dispatchEvent(new CustomEvent("memory:key-refused", { detail: error }));
      throw error;
    }
    headers.Authorization = `Bearer ${key}`;
  }
  const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (cause) {
    throw new ApiError(0, "unreachable", `The service did not answer (${cause.message}).`);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (response.ok || accept.includes(response.status)) return data;
  const info = (data && data.error) || {};
  const error = new ApiError(
    response.status,
    info.code || `http_${response.status}`,
    info.message || `${response.status} ${response.statusText}`.trim(),
    info.details || null,
  );
  if (auth && (response.status === 401 || response.status === 403)) {
    dispatchEvent(new CustomEvent("memory:key-refused", { detail: error }));
  }
  throw error;
}
