// Node's built-in test runner on the pure helpers of schedlog/serve/static/api.js (issue 22):
// run by tests/web/test_api_js.py, which copies api.js beside this file as api.mjs. The
// browser globals the module touches (sessionStorage, location, history, fetch) are stubbed.
import { test } from "node:test";
import assert from "node:assert/strict";

const store = new Map();
globalThis.sessionStorage = {
  getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)),
  removeItem: (k) => store.delete(k),
};
globalThis.location = { hash: "", pathname: "/", search: "" };
const replaced = [];
globalThis.history = { replaceState: (_s, _t, url) => replaced.push(url) };
const calls = [];
let answer = () => new Response("{}", { status: 200 });
globalThis.fetch = async (url, init) => {
  calls.push({ url, init });
  return answer(url, init);
};

const { ApiError, api, followEvents, getToken, safeDecode, setToken, takeFragmentCode, taskPath } =
  await import("./api.mjs");

test("taskPath encodes the session id and the task id as one path segment each", () => {
  assert.equal(taskPath("a/b c", "x?y#z"), "/v1/sessions/a%2Fb%20c/tasks/x%3Fy%23z");
  assert.equal(taskPath('<&">', "é"), "/v1/sessions/%3C%26%22%3E/tasks/%C3%A9");
});

test("the token is kept in sessionStorage and cleared by an empty one", () => {
  setToken("tok-1");
  assert.equal(getToken(), "tok-1");
  setToken("");
  assert.equal(getToken(), null);
});

test("a #code= fragment leaves the history first, then is exchanged once for the token", async () => {
  setToken("");
  location.hash = "#code=a%2Bb%26c";
  answer = () => new Response('{"token":"tok-from-code"}', { status: 200 });
  assert.equal(await takeFragmentCode(), "signed-in");
  assert.deepEqual(replaced.at(-1), "/#/");
  const { url, init } = calls.at(-1);
  assert.equal(url, "/v1/signin");
  assert.equal(init.method, "POST");
  assert.equal(init.body, '{"code":"a+b&c"}');
  assert.equal(init.headers.Authorization, undefined); // the code is the credential
  assert.equal(getToken(), "tok-from-code");
  location.hash = "#/tasks";
  assert.equal(await takeFragmentCode(), "none");
});

test("a refused or malformed code signs nobody in", async () => {
  setToken("");
  location.hash = "#code=used";
  answer = () => new Response('{"error":{"code":"signin_code_refused","message":"x"}}', { status: 401 });
  assert.equal(await takeFragmentCode(), "refused");
  const before = calls.length;
  location.hash = "#code=%E0%A4%A";
  assert.equal(await takeFragmentCode(), "refused");
  assert.equal(calls.length, before); // nothing sent for a malformed escape
  assert.equal(getToken(), null);
  assert.equal(safeDecode("%"), null);
  assert.equal(safeDecode("a%20b"), "a b");
});

test("catalog builds its query and sends the token", async () => {
  setToken("tok-2");
  answer = () => new Response('{"items":[],"nextCursor":null}', { status: 200 });
  const page = await api.catalog({ limit: 50, title: "<&>", status: "active", order: "desc" });
  assert.deepEqual(page, { items: [], nextCursor: null });
  const { url, init } = calls.at(-1);
  assert.equal(url, "/v1/tasks?limit=50&status=active&title=%3C%26%3E&order=desc");
  assert.equal(init.headers.Authorization, "Bearer tok-2");
  assert.equal(init.method, "GET");
});

test("an update sends its body as JSON, a lone surrogate as an escape", async () => {
  answer = () => new Response('{"updated":true}', { status: 200 });
  await api.update("s-1", "schedule-1", { expected: {}, title: "x\ud800" });
  const { url, init } = calls.at(-1);
  assert.equal(url, "/v1/sessions/s-1/tasks/schedule-1");
  assert.equal(init.method, "PUT");
  assert.equal(init.headers["Content-Type"], "application/json");
  assert.equal(init.body, '{"expected":{},"title":"x\\ud800"}');
});

test("an error answer becomes an ApiError with its code, or http_<status>", async () => {
  answer = () =>
    new Response('{"error":{"code":"schedule_conflict","message":"changed"}}', { status: 409 });
  await assert.rejects(api.task("s", "t"), (e) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 409);
    assert.equal(e.code, "schedule_conflict");
    assert.equal(e.message, "changed");
    return true;
  });
  answer = () => new Response("<html>oops</html>", { status: 502, statusText: "Bad Gateway" });
  await assert.rejects(api.remove("s", "t"), (e) => e.code === "http_502" && e.body === null);
});

test("followEvents parses frames split across chunks and resumes with Last-Event-ID", async () => {
  const frames = [
    'id: 7-1\nevent: schedule/changed\ndata: {"id":"a","kind":"cre',
    'ated"}\n\n: keep-alive\n\nid: 7-2\r\nevent: schedule/reset\r\ndata: {"reason":"<&>"}\r\n\r\n',
  ];
  let connection = 0;
  answer = (url, init) => {
    connection += 1;
    if (connection > 1) return new Promise(() => {}); // the reconnect: never answers
    const body = new ReadableStream({
      start(controller) {
        for (const f of frames) controller.enqueue(new TextEncoder().encode(f));
        controller.close();
      },
    });
    return new Response(body, { status: 200 });
  };
  const events = [];
  const states = [];
  let resumed = null;
  const done = new Promise((resolve) => {
    const stop = followEvents(
      (name, data) => events.push([name, data]),
      (state) => {
        states.push(state);
        if (state === "reconnecting") {
          stop();
          resolve();
        }
      },
    );
  });
  await done;
  assert.deepEqual(events, [
    ["schedule/changed", { id: "a", kind: "created" }],
    ["schedule/reset", { reason: "<&>" }],
  ]);
  assert.deepEqual(states, ["live", "reconnecting"]);
  const first = calls.filter((c) => c.url === "/v1/events")[0];
  assert.equal(first.init.headers["Last-Event-ID"], undefined);
  resumed = calls.filter((c) => c.url === "/v1/events");
  assert.equal(resumed.length, 1); // stopped before the reconnect's delay ran out
});
