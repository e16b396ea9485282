// The admin API as the page uses it: JSON calls with the API key, and the snapshot stream (server-sent events).
//
// The stream is read with fetch rather than EventSource so that it can carry the key when reads are keyed
// (`admin.read_keys = true`): EventSource cannot send headers.

const KEY_ITEM = "mocra.admin.key";

/** An answer of the API that is not 2xx, with the server's `{"error": ...}` message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/** The API key the user typed, kept for this browser tab only. */
export const apiKey = {
  get() {
    return sessionStorage.getItem(KEY_ITEM) || "";
  },
  set(key) {
    if (key) sessionStorage.setItem(KEY_ITEM, key);
    else sessionStorage.removeItem(KEY_ITEM);
  },
};

function headers(extra) {
  const out = { Accept: "application/json", ...extra };
  const key = apiKey.get();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") message = body.error;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message);
}

/** GET a JSON resource relative to the page (so a reverse proxy may mount the node under a prefix). */
export async function getJson(path, signal) {
  const response = await fetch(path, { headers: headers(), signal });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** POST a JSON body; the answer's JSON. */
export async function postJson(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body ?? {}),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** The path of a job's resource: `api/v1/jobs/<job>/<rest>`. */
export function jobPath(job, rest = "") {
  return `api/v1/jobs/${encodeURIComponent(job)}${rest ? `/${rest}` : ""}`;
}

/**
 * Read a server-sent event stream; calls `onEvent(name, data)` per event until the stream ends.
 * Rejects with ApiError when the server refuses, and with an AbortError when `signal` aborts.
 */
export async function readEvents(path, signal, onEvent) {
  const response = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let name = "message";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    // Lines end with \n, \r\n or \r; a \r at the very end may be half of a \r\n still on its way.
    const lines = buffer.split(/\r\n|\n|\r(?!$)/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (data.length) onEvent(name, data.join("\n"));
        name = "message";
        data = [];
      } else if (line.startsWith(":")) {
        // a comment (keep-alive)
      } else {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "event") name = text;
        else if (field === "data") data.push(text);
      }
    }
  }
}
