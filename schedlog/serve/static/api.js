// The page's HTTP client: every call of the /v1 API the page makes, in one place.
// The token lives in sessionStorage (this tab only) and goes in the Authorization header.

const TOKEN_KEY = "schedlog.token";

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** decodeURIComponent that answers null for a malformed escape ("%E0%A4%A") instead of
 * throwing a URIError (which left the page blank). */
export function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** A one-time sign-in code handed over in the URL fragment (#code=...) by the URL `host serve`
 * prints: removed from the address bar at once, then exchanged once over POST /v1/signin for
 * the token (docs/http-api.md#sign-in). The token itself never appears in a URL. */
export async function takeFragmentCode() {
  const m = /^#code=([^&]+)/.exec(location.hash);
  if (!m) return "none";
  history.replaceState(null, "", location.pathname + location.search + "#/");
  const code = safeDecode(m[1]);
  if (code === null) return "refused";
  try {
    const res = await fetch("/v1/signin", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ code }),
    });
    if (!res.ok) return "refused";
    const data = await res.json();
    setToken(data.token);
    return "signed-in";
  } catch {
    return "refused";
  }
}

async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${getToken() || ""}`, Accept: "application/json" };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || `http_${res.status}`, err.message || res.statusText, data);
  }
  return data;
}

const enc = encodeURIComponent;

export function taskPath(sessionId, id) {
  return `/v1/sessions/${enc(sessionId)}/tasks/${enc(id)}`;
}

export const api = {
  catalog({ cursor, limit, sessionId, status, title, order }) {
    const q = new URLSearchParams();
    q.set("limit", String(limit));
    if (cursor) q.set("cursor", cursor);
    if (sessionId) q.set("sessionId", sessionId);
    if (status) q.set("status", status);
    if (title) q.set("title", title);
    if (order && order !== "asc") q.set("order", order);
    return call("GET", `/v1/tasks?${q}`);
  },
  task(sessionId, id) {
    return call("GET", taskPath(sessionId, id));
  },
  explain(id, count) {
    return call("GET", `/v1/tasks/${enc(id)}/explain?count=${count}`);
  },
  history(sessionId, id, limit, before) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set("before", before);
    return call("GET", `${taskPath(sessionId, id)}/history?${q}`);
  },
  update(sessionId, id, body) {
    return call("PUT", taskPath(sessionId, id), body);
  },
  remove(sessionId, id) {
    return call("DELETE", taskPath(sessionId, id));
  },
  /** POST .../pause or .../resume with the record last seen (compare-and-set). */
  pause(sessionId, id, expected, resume = false) {
    return call("POST", `${taskPath(sessionId, id)}/${resume ? "resume" : "pause"}`, { expected });
  },
  preview(selector, count) {
    return call("POST", "/v1/rules/preview", { ...selector, count });
  },
};

/** Follow /v1/events (Server-Sent Events) over fetch, so the token goes in a header rather
 * than the URL. Reconnects with back-off and resumes with Last-Event-ID. */
export function followEvents(onEvent, onState) {
  let lastId = null;
  let stopped = false;
  let delay = 1000;
  let controller = null;

  async function once() {
    controller = new AbortController();
    const headers = { Authorization: `Bearer ${getToken() || ""}`, Accept: "text/event-stream" };
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    const res = await fetch("/v1/events", { headers, signal: controller.signal });
    if (res.status === 401) throw new ApiError(401, "unauthorized", "token refused");
    if (!res.ok || !res.body) throw new ApiError(res.status, `http_${res.status}`, "event stream refused");
    onState("live");
    delay = 1000;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(buffer.slice(cut).match(/^\r?\n\r?\n/)[0].length + cut);
        const ev = { event: "message", data: [], id: null };
        for (const line of block.split(/\r?\n/)) {
          if (!line || line.startsWith(":")) continue;
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
          if (field === "data") ev.data.push(val);
          else if (field === "event") ev.event = val;
          else if (field === "id") ev.id = val;
        }
        if (ev.id !== null) lastId = ev.id;
        if (ev.data.length) {
          let data = null;
          try {
            data = JSON.parse(ev.data.join("\n"));
          } catch {
            data = null;
          }
          onEvent(ev.event, data);
        }
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        await once();
      } catch (e) {
        if (stopped) return;
        if (e instanceof ApiError && e.status === 401) {
          onState("unauthorized");
          return;
        }
      }
      if (stopped) return;
      onState("reconnecting");
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 30000);
    }
  })();

  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
