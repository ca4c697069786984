// The schedlog task page: sign-in, catalog, detail with history, staged edit, pause and
// resume, delete, live.
import { api, ApiError, followEvents, getToken, safeDecode, setToken, takeFragmentCode } from "./api.js";
import { formatUtc, formatZoned, relative, viewerZone } from "./times.js";

const $ = (id) => document.getElementById(id);
const HISTORY_PAGE = 20;
const LOCAL_ZONE = viewerZone();

const state = {
  filters: { title: "", sessionId: "", status: "", limit: 50 },
  order: "asc", // the catalog is ordered by next target (scheduledAt, then id)
  cursors: [null], // cursor of each page visited; the last one is the page shown
  nextCursor: null,
  detail: null, // {sessionId, id, entry, historyBefore}
  edit: null, // {expected, changedOnServer, pending}
  stopEvents: null,
  flash: "", // a message for the next catalog load (after a delete)
  detailSeq: 0, // which detail load is the current one
  refreshTimer: null,
};

// --- small DOM helpers ---------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) node.append(c);
  return node;
}

/** User text (a title, an id) as an isolated, clipped inline: its bidi controls stay inside. */
function userText(text) {
  return el("bdi", { dir: "auto", class: "user-text", text });
}

/** User text inside plain text (a status line): wrapped in FSI ... PDI (U+2068, U+2069). */
function isolated(text) {
  return `\u2068${text}\u2069`;
}

function show(section) {
  for (const id of ["signin", "catalog", "detail"]) $(id).hidden = id !== section;
  $("sign-out").hidden = section === "signin";
}

/** A time stated in the task's zone (when it has one) and in the viewer's, plus a hint. */
function timeBlock(instant, zone, hint = true) {
  const wrap = el("span", { class: "when" });
  if (zone) wrap.append(el("span", { class: "zoned", text: formatZoned(instant, zone) }));
  else wrap.append(el("span", { class: "zoned", text: formatUtc(instant) }));
  if (zone !== LOCAL_ZONE) {
    wrap.append(el("span", { class: "local", text: `${formatZoned(instant, LOCAL_ZONE)} your time` }));
  }
  if (hint) wrap.append(el("span", { class: "rel", text: relative(instant, Date.now()) }));
  return wrap;
}

function statusText(entry) {
  if (entry.status === "inactive") return "ended";
  if (entry.status === "paused") return "paused";
  if (entry.status === "retrying" && entry.retry) return `retrying delivery (attempt ${entry.retry.attempts}, next ${formatUtc(entry.retry.nextAttemptAt)})`;
  return entry.state === "overdue" ? "active, overdue" : "active";
}

function fail(where, err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut("The token was refused; sign in again.");
    return;
  }
  const text = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err && err.message);
  where.textContent = text;
}

// --- sign-in -------------------------------------------------------------------------------

function signOut(message) {
  setToken(null);
  if (state.stopEvents) state.stopEvents();
  state.stopEvents = null;
  $("live").textContent = "";
  $("signin-error").textContent = message || "";
  show("signin");
  $("token").focus();
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const token = $("token").value.trim();
  if (!token) return;
  setToken(token);
  $("token").value = "";
  try {
    await api.catalog({ limit: 1 });
  } catch (err) {
    setToken(null);
    $("signin-error").textContent =
      err instanceof ApiError && err.status === 401 ? "That token was refused." : `Could not sign in: ${err.message}`;
    return;
  }
  $("signin-error").textContent = "";
  startLive();
  route();
});

$("sign-out").addEventListener("click", () => signOut("Signed out."));

// --- catalog -------------------------------------------------------------------------------

function readFilters() {
  state.filters = {
    title: $("f-title").value.trim(),
    sessionId: $("f-session").value.trim(),
    status: $("f-status").value,
    limit: Number($("f-limit").value),
  };
  state.cursors = [null];
}

$("filters").addEventListener("submit", (e) => {
  e.preventDefault();
  readFilters();
  loadCatalog();
});
$("filters").addEventListener("reset", () => {
  setTimeout(() => {
    readFilters();
    loadCatalog();
  });
});
$("f-status").addEventListener("change", () => {
  readFilters();
  loadCatalog();
});

$("sort-next").addEventListener("click", () => {
  state.order = state.order === "asc" ? "desc" : "asc";
  state.cursors = [null];
  loadCatalog();
});
$("next-page").addEventListener("click", () => {
  if (!state.nextCursor) return;
  state.cursors.push(state.nextCursor);
  loadCatalog();
});
$("prev-page").addEventListener("click", () => {
  if (state.cursors.length < 2) return;
  state.cursors.pop();
  loadCatalog();
});
$("first-page").addEventListener("click", () => {
  state.cursors = [null];
  loadCatalog();
});

function renderSort() {
  const asc = state.order === "asc";
  $("th-next").setAttribute("aria-sort", asc ? "ascending" : "descending");
  $("sort-mark").textContent = asc ? "▲" : "▼";
  $("sort-next").setAttribute("aria-label", asc ? "Next target, soonest first: activate to show the latest first" : "Next target, latest first: activate to show the soonest first");
}

function catalogRow(entry) {
  const link = el("a", { href: `#/task/${encodeURIComponent(entry.sessionId)}/${encodeURIComponent(entry.id)}`, text: entry.title, dir: "auto", class: "user-text" });
  const next = entry.status === "inactive" ? el("span", { class: "muted", text: "none (ended)" }) : timeBlock(entry.scheduledAt, entry.timeZone);
  const last = entry.lastDelivery
    ? timeBlock(entry.lastDelivery.deliveredAt, entry.timeZone)
    : el("span", { class: "muted", text: "never" });
  const cells = [
    ["Title", link],
    ["Rule", document.createTextNode(entry.description)],
    ["Next target", next],
    ["Session", el("code", { text: entry.sessionId, dir: "auto", class: "user-text" })],
    ["Status", document.createTextNode(statusText(entry))],
    ["Last delivery", last],
  ];
  const tr = el("tr", { "data-id": entry.id, class: entry.status === "paused" ? "paused" : undefined });
  for (const [label, node] of cells) tr.append(el("td", { "data-label": label }, node));
  return tr;
}

function renderEmpty(filtered) {
  const box = $("empty");
  box.replaceChildren();
  if (filtered) {
    box.append(el("p", { text: "No reminders match these filters." }));
    return;
  }
  box.append(
    el("h3", { text: "No reminders yet" }),
    el("p", { text: "Reminders appear here when an agent calls the schedule_create tool, or when you create one through the API, for example:" }),
    el("pre", {}, el("code", {
      text:
        'curl -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\\n' +
        `  -d '{"title":"Standup","prompt":"Post the standup notes","daily":{"time":"09:30:00","time_zone":"Europe/Berlin"}}' \\\n` +
        `  ${location.origin}/v1/sessions/s-1/tools/schedule_create`,
    })),
  );
}

async function loadCatalog() {
  renderSort();
  const cursor = state.cursors[state.cursors.length - 1];
  const status = $("catalog-status");
  let page;
  try {
    page = await api.catalog({ ...state.filters, cursor, order: state.order });
  } catch (err) {
    fail(status, err);
    return;
  }
  const items = page.items || [];
  state.nextCursor = page.nextCursor || null;
  $("rows").replaceChildren(...items.map(catalogRow));
  performance.mark("schedlog:catalog-rendered"); // read by benchmarks/web_catalog.py
  const filtered = Boolean(state.filters.title || state.filters.sessionId || state.filters.status);
  const empty = items.length === 0 && state.cursors.length === 1;
  $("empty").hidden = !empty;
  $("tasks").hidden = empty;
  if (empty) renderEmpty(filtered);
  const n = state.cursors.length;
  $("page-no").textContent = `Page ${n}`;
  $("prev-page").disabled = n < 2;
  $("first-page").disabled = n < 2;
  $("next-page").disabled = !state.nextCursor;
  const flash = state.flash ? `${state.flash} ` : "";
  state.flash = "";
  status.textContent = flash + (empty ? "" : `Showing ${items.length} reminder${items.length === 1 ? "" : "s"} on page ${n}${state.nextCursor ? "; more on the next page" : ""}.`);
}

// --- detail --------------------------------------------------------------------------------

function recordRows(entry) {
  const rows = [
    ["Title", entry.title],
    ["Prompt", entry.prompt],
    ["Rule", entry.description],
    ["Kind", entry.kind],
    ["Status", statusText(entry)],
    ["Next target", entry.status === "inactive" ? null : entry.scheduledAt],
    ["Session", entry.sessionId],
    ["Id", entry.id],
    ["Last delivery", entry.lastDelivery ? entry.lastDelivery.deliveredAt : "never"],
  ];
  if (entry.retry) rows.push(["Delivery retry", `attempt ${entry.retry.attempts}, next ${formatUtc(entry.retry.nextAttemptAt)}`]);
  const nodes = [];
  for (const [k, v] of rows) {
    if (v === null) continue;
    let value;
    if ((k === "Next target" || (k === "Last delivery" && v !== "never")) && v) value = timeBlock(v, entry.timeZone);
    else value = document.createTextNode(v);
    nodes.push(el("dt", { text: k }), el("dd", {}, value));
  }
  return nodes;
}

function renderDetail() {
  const d = state.detail;
  const entry = d.entry;
  $("detail-h").textContent = entry.title;
  $("detail-h").dir = "auto";
  $("record").replaceChildren(...recordRows(entry));
  $("edit").disabled = entry.status === "inactive";
  $("edit").title = entry.status === "inactive" ? "An ended reminder cannot be edited" : "";
  // docs/protocol.md#pause: an active reminder can be paused, a paused one resumed
  $("pause").hidden = entry.status === "inactive" || entry.status === "paused";
  $("resume").hidden = entry.status !== "paused";
}

async function loadUpcoming() {
  const list = $("upcoming");
  const d = state.detail;
  if (!d) return;
  if (d.entry.status === "inactive") {
    list.replaceChildren(el("li", { class: "muted", text: "None: the reminder has ended." }));
    return;
  }
  if (d.entry.status === "paused") {
    list.replaceChildren(el("li", { class: "muted", text: "None while paused: nothing is delivered until it is resumed." }));
    return;
  }
  let data;
  try {
    data = await api.explain(d.id, 5);
  } catch (err) {
    if (state.detail !== d) return;
    list.replaceChildren(el("li", { class: "error" }));
    fail(list.firstChild, err);
    return;
  }
  if (state.detail !== d) return; // another task is shown now
  const zone = d.entry.timeZone;
  const items = (data.upcoming || []).map((t) => {
    const li = el("li", {}, timeBlock(t.scheduledAt, zone));
    if (t.dstChange) li.append(el("span", { class: "dst", text: "DST change on this local day" }));
    return li;
  });
  list.replaceChildren(...(items.length ? items : [el("li", { class: "muted", text: "No further targets." })]));
}

function historyFlags(page) {
  const parts = [];
  if (page.earlierRecordsPruned) parts.push(`Earlier deliveries were pruned by retention (kept: ${page.retention ? `${page.retention.days} days, at most ${page.retention.records} records` : "per configuration"}).`);
  else if (page.earlierRecordsUnavailable) parts.push("Earlier deliveries are unavailable: this reminder was saved before its history was kept.");
  return parts.join(" ");
}

async function loadHistory(before) {
  const d = state.detail;
  if (!d) return;
  let page;
  try {
    page = await api.history(d.sessionId, d.id, HISTORY_PAGE, before);
  } catch (err) {
    if (state.detail === d) fail($("history-flags"), err);
    return;
  }
  if (state.detail !== d) return; // another task is shown now
  if (page.code) {
    $("history-flags").textContent = `${page.code}`;
    return;
  }
  const rows = (page.records || []).map((r) =>
    el("tr", {},
      el("td", { "data-label": "Occurrence" }, timeBlock(r.scheduledAt, d.entry.timeZone, false)),
      el("td", { "data-label": "Delivered" }, timeBlock(r.deliveredAt, d.entry.timeZone, false)),
      el("td", { "data-label": "Message id" }, el("code", { text: r.messageId })),
      el("td", { "data-label": "Prompt", text: r.prompt === undefined ? "(not recorded)" : r.prompt }),
    ));
  if (before) $("history-rows").append(...rows);
  else $("history-rows").replaceChildren(...rows);
  const total = $("history-rows").children.length;
  $("history-empty").hidden = total > 0;
  $("history-flags").textContent = page.nextBefore ? "" : historyFlags(page);
  d.historyBefore = page.nextBefore || null;
  $("older").hidden = !d.historyBefore;
}

$("older").addEventListener("click", () => state.detail && loadHistory(state.detail.historyBefore));

async function openDetail(sessionId, id) {
  show("detail");
  state.edit = null;
  state.detail = null; // until this task's record is here, nothing acts on another one
  const seq = ++state.detailSeq;
  $("edit-form").hidden = true;
  $("conflict").hidden = true;
  $("record-view").hidden = true;
  $("detail-h").textContent = "Loading…";
  $("server-notice").hidden = true;
  $("detail-message").textContent = "";
  $("history-rows").replaceChildren();
  $("upcoming").replaceChildren();
  let entry;
  try {
    entry = await api.task(sessionId, id);
  } catch (err) {
    if (seq !== state.detailSeq) return;
    $("detail-h").textContent = "Reminder not found";
    $("record").replaceChildren();
    if (err instanceof ApiError && err.status === 404) $("detail-message").textContent = "This reminder does not exist (it may have been deleted).";
    else fail($("detail-message"), err);
    return;
  }
  if (seq !== state.detailSeq) return; // another task was opened meanwhile
  state.detail = { sessionId, id, entry, historyBefore: null };
  renderDetail();
  $("record-view").hidden = false;
  $("detail-h").focus();
  await Promise.all([loadUpcoming(), loadHistory(null)]);
}

function showDeleted() {
  $("detail-message").textContent = "This reminder was deleted on the server.";
  $("edit").disabled = true;
  $("delete").disabled = true;
  $("pause").disabled = true;
  $("resume").disabled = true;
}

async function refreshDetail() {
  const d = state.detail;
  if (!d) return;
  let entry;
  try {
    entry = await api.task(d.sessionId, d.id);
  } catch (err) {
    if (state.detail === d && err instanceof ApiError && err.status === 404) showDeleted();
    return;
  }
  if (state.detail !== d) return; // another task is shown now
  d.entry = entry;
  renderDetail();
  await Promise.all([loadUpcoming(), loadHistory(null)]);
}

// --- staged edit ---------------------------------------------------------------------------

const KINDS = ["at", "every", "daily", "weekly", "cron"];
const FIELD_ERRORS = ["title", "prompt", "at", "every", "time", "weekdays", "cron", "zone", "form"];

function clearErrors() {
  for (const f of FIELD_ERRORS) {
    $(`err-${f}`).textContent = "";
  }
  for (const input of $("edit-form").querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
}

function showFieldError(field, code, message) {
  const target = $(`err-${field}`);
  target.textContent = `${code}: ${message}`;
  const input = { title: "e-title", prompt: "e-prompt", at: "e-at-date", every: "e-every", time: "e-time", cron: "e-cron", zone: "e-zone" }[field];
  if (input) {
    $(input).setAttribute("aria-invalid", "true");
    $(input).focus();
  }
}

function selectedKind() {
  const r = $("edit-form").querySelector('input[name="kind"]:checked');
  return r ? r.value : "keep";
}

function setKind(kind) {
  for (const r of $("edit-form").querySelectorAll('input[name="kind"]')) r.checked = r.value === kind;
  for (const box of $("edit-form").querySelectorAll(".kind-fields")) box.hidden = !box.dataset.kind.split(" ").includes(kind);
  if (kind === "cron") schedulePreview();
}

/** The form's rule fields from a record (the kind picks which ones are shown). */
function fillRule(rec) {
  const zone = rec.timeZone || LOCAL_ZONE;
  $("e-zone").value = zone;
  const at = new Date(Date.parse(rec.scheduledAt));
  const fmt = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
  const p = Object.fromEntries(fmt.formatToParts(at).map((x) => [x.type, x.value]));
  $("e-at-date").value = `${p.year}-${p.month}-${p.day}`;
  $("e-at-time").value = `${p.hour}:${p.minute}:${p.second}`;
  const every = rec.everySeconds || 3600;
  const unit = every % 3600 === 0 ? 3600 : every % 60 === 0 ? 60 : 1;
  $("e-every-unit").value = String(unit);
  $("e-every").value = String(every / unit);
  $("e-time").value = rec.time ? rec.time.slice(0, 8) : "09:00:00";
  const days = rec.weekdays || [1, 2, 3, 4, 5];
  for (const c of $("edit-form").querySelectorAll('input[name="wd"]')) c.checked = days.includes(Number(c.value));
  $("e-cron").value = rec.expression || "0 9 * * 1-5";
}

function ruleSnapshot() {
  return JSON.stringify(buildChange(selectedKind()));
}

function timeWithSeconds(v) {
  return v.length === 5 ? `${v}:00` : v;
}

/** The timing change of the chosen kind, in the API's shape, or null for "keep". */
function buildChange(kind) {
  const zone = $("e-zone").value.trim();
  switch (kind) {
    case "at":
      return { kind: "at", at: { date: $("e-at-date").value, time: timeWithSeconds($("e-at-time").value), time_zone: zone } };
    case "every": {
      const n = Number($("e-every").value) * Number($("e-every-unit").value);
      return { kind: "every", every_seconds: Number.isFinite(n) ? n : $("e-every").value };
    }
    case "daily":
      return { kind: "daily", daily: { time: timeWithSeconds($("e-time").value), time_zone: zone } };
    case "weekly": {
      const weekdays = [...$("edit-form").querySelectorAll('input[name="wd"]:checked')].map((c) => Number(c.value));
      return { kind: "weekly", weekly: { time: timeWithSeconds($("e-time").value), time_zone: zone, weekdays } };
    }
    case "cron":
      return { kind: "cron", cron: { expression: $("e-cron").value, time_zone: zone } };
    default:
      return null;
  }
}

function startEdit() {
  const entry = state.detail.entry;
  const expected = recordOf(entry);
  $("e-title").value = entry.title;
  $("e-prompt").value = entry.prompt;
  fillRule(entry);
  $("after-note").hidden = entry.kind !== "after";
  setKind("keep");
  state.edit = { expected, expectedRule: entry.description, initialRule: null, changedOnServer: false };
  clearErrors();
  $("conflict").hidden = true;
  $("record-view").hidden = true;
  $("edit-form").hidden = false;
  $("detail-message").textContent = "";
  $("e-title").focus();
}

/** The record part of a catalog entry: the `expected` of an update. */
function recordOf(entry) {
  const { sessionId: _s, status: _st, lastDelivery: _l, retry: _r, description: _d, ...record } = entry;
  return record;
}

function endEdit() {
  state.edit = null;
  $("edit-form").hidden = true;
  $("conflict").hidden = true;
  $("record-view").hidden = false;
  $("server-notice").hidden = true;
}

$("edit").addEventListener("click", () => state.detail && startEdit());
$("cancel").addEventListener("click", () => {
  const wasChanged = state.edit && state.edit.changedOnServer;
  endEdit();
  $("edit").focus();
  if (wasChanged) refreshDetail();
});
for (const r of $("edit-form").querySelectorAll('input[name="kind"]')) r.addEventListener("change", () => setKind(selectedKind()));

/** The user's staged edit: only what differs from the record captured when editing began. */
function stagedEdit() {
  const exp = state.edit.expected;
  const body = {};
  const title = $("e-title").value;
  const prompt = $("e-prompt").value;
  if (title.trim() !== exp.title) body.title = title;
  if (prompt.trim() !== exp.prompt) body.prompt = prompt;
  const change = buildChange(selectedKind());
  if (change) body.change = change;
  return body;
}

function placeError(code, message, change) {
  const kind = change ? change.kind : null;
  const lower = message.toLowerCase();
  if (code === "invalid_prompt") return showFieldError(lower.startsWith("title") ? "title" : "prompt", code, message);
  if (code === "invalid_time_zone") return showFieldError(kind === null ? "form" : "zone", code, message);
  const byKind = { at: "at", every: "every", daily: "time", weekly: lower.includes("weekday") ? "weekdays" : "time", cron: "cron" };
  if (kind && byKind[kind]) return showFieldError(byKind[kind], code, message);
  return showFieldError("form", code, message);
}

async function save(edit) {
  const d = state.detail;
  clearErrors();
  $("save").disabled = true;
  let result;
  try {
    result = await api.update(d.sessionId, d.id, { expected: state.edit.expected, ...edit });
  } catch (err) {
    $("save").disabled = false;
    if (err instanceof ApiError && err.code === "schedule_conflict") return showConflict(edit);
    if (err instanceof ApiError && err.code === "schedule_ended") {
      endEdit();
      $("detail-message").textContent = "Not saved: this reminder has already ended, so it can no longer be edited.";
      await refreshDetail();
      return;
    }
    if (err instanceof ApiError && err.code === "schedule_not_found") {
      endEdit();
      $("detail-message").textContent = "Not saved: this reminder no longer exists.";
      return;
    }
    if (err instanceof ApiError && err.status !== 401) return placeError(err.code, err.message, edit.change);
    return fail($("err-form"), err);
  }
  $("save").disabled = false;
  if (result && result.code) {
    // Answers given as values ({id, updated:false, code}) rather than statuses.
    if (result.code === "schedule_conflict") return showConflict(edit);
    return placeError(result.code, result.message || result.code, edit.change);
  }
  endEdit();
  $("detail-message").textContent = result.updated ? "Saved." : "Nothing changed: the edit matches the saved reminder.";
  await refreshDetail();
  $("edit").focus();
}

$("edit-form").addEventListener("submit", (e) => {
  e.preventDefault();
  save(stagedEdit());
});

// --- conflict ------------------------------------------------------------------------------

async function editedView(edit, base, baseRule) {
  const out = { ...base };
  if (edit.title !== undefined) out.title = edit.title.trim();
  if (edit.prompt !== undefined) out.prompt = edit.prompt.trim();
  out.rule = edit.change ? await describeChange(edit.change) : baseRule;
  return out;
}

/** The server's description of an unsaved rule change (POST /v1/rules/preview). */
async function describeChange(change) {
  const selector = change.kind === "every" ? { every_seconds: change.every_seconds } : { [change.kind]: change[change.kind] };
  try {
    const data = await api.preview(selector, 1);
    return data.error ? `${change.kind} rule (${data.error.message})` : data.description;
  } catch {
    return `${change.kind} rule`;
  }
}

async function showConflict(edit) {
  // The task as it is now, as a catalog entry: the record and its description.
  const d = state.detail;
  let current;
  try {
    current = await api.task(d.sessionId, d.id);
  } catch (err) {
    fail($("err-form"), err);
    return;
  }
  state.edit.pending = edit;
  state.edit.current = current;
  const mine = await editedView(edit, state.edit.expected, state.edit.expectedRule);
  const rows = [
    ["Title", current.title, mine.title],
    ["Prompt", current.prompt, mine.prompt],
    ["Rule", current.description, mine.rule],
  ];
  const target = current.scheduledAt ? formatZoned(current.scheduledAt, current.timeZone || "UTC") : "";
  rows.push(["Next target", target, edit.change ? "computed from your rule when saved" : target]);
  $("conflict-rows").replaceChildren(
    ...rows.map(([k, a, b]) => el("tr", { class: a === b ? "" : "differs" }, el("th", { scope: "row", text: k }), el("td", { text: a }), el("td", { text: b }))),
  );
  $("conflict").hidden = false;
  $("edit-form").hidden = true;
  $("reapply").focus();
}

$("reapply").addEventListener("click", async () => {
  const e = state.edit;
  const current = e.current;
  e.expected = recordOf(current);
  e.expectedRule = current.description;
  state.detail.entry = { ...state.detail.entry, ...current };
  $("conflict").hidden = true;
  $("edit-form").hidden = false;
  $("server-notice").hidden = true;
  e.changedOnServer = false;
  // Title and prompt edits that now equal the current record are simply dropped.
  const edit = { ...e.pending };
  if (edit.title !== undefined && edit.title.trim() === current.title) delete edit.title;
  if (edit.prompt !== undefined && edit.prompt.trim() === current.prompt) delete edit.prompt;
  await save(edit);
});
$("discard").addEventListener("click", async () => {
  endEdit();
  await refreshDetail();
  $("edit").focus();
});

// --- cron live preview ---------------------------------------------------------------------

let previewTimer = null;
let previewSeq = 0;

function schedulePreview() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(runPreview, 250);
}

async function runPreview() {
  if (selectedKind() !== "cron") return;
  const seq = ++previewSeq;
  const expression = $("e-cron").value;
  const zone = $("e-zone").value.trim();
  const box = $("cron-preview");
  let data;
  try {
    data = await api.preview({ cron: { expression, time_zone: zone } }, 5);
  } catch (err) {
    if (seq === previewSeq) fail(box, err);
    return;
  }
  if (seq !== previewSeq) return;
  if (data.error) {
    box.replaceChildren(el("p", { class: "preview-error", text: `Preview: ${data.error.code}: ${data.error.message}` }));
    return;
  }
  const list = el("ol", {}, ...data.upcoming.map((t) => {
    const li = el("li", {}, timeBlock(t.scheduledAt, zone));
    if (t.dstChange) li.append(el("span", { class: "dst", text: "DST change on this local day" }));
    return li;
  }));
  box.replaceChildren(el("p", { text: `Next targets of ${data.description}:` }), list);
}

$("e-cron").addEventListener("input", schedulePreview);
$("e-zone").addEventListener("input", () => selectedKind() === "cron" && schedulePreview());

// --- pause and resume ----------------------------------------------------------------------

async function pauseOrResume(resume) {
  const d = state.detail;
  if (!d) return;
  const button = $(resume ? "resume" : "pause");
  button.disabled = true;
  try {
    const value = await api.pause(d.sessionId, d.id, recordOf(d.entry), resume);
    if (state.detail !== d) return;
    $("detail-message").textContent = resume
      ? value.code === "schedule_ended" ? "Resumed: the rule has no occurrence left, so the reminder has ended." : "Resumed: occurrences missed while paused are not delivered."
      : "Paused: it will not be delivered until it is resumed.";
  } catch (err) {
    if (state.detail !== d) return;
    if (err instanceof ApiError && err.code === "schedule_conflict") $("detail-message").textContent = "This reminder changed on the server; it is shown as it is now. Try again.";
    else fail($("detail-message"), err);
  } finally {
    button.disabled = false;
  }
  await refreshDetail();
  (resume ? $("pause") : $("resume")).focus();
}

$("pause").addEventListener("click", () => pauseOrResume(false));
$("resume").addEventListener("click", () => pauseOrResume(true));

// --- delete --------------------------------------------------------------------------------

$("delete").addEventListener("click", () => {
  if (!state.detail) return;
  const entry = state.detail.entry;
  // Each piece of user text in its own <bdi dir=auto>: a bidi override (U+202E) in a title
  // cannot reorder the rest of the question (docs/operations.md#web-page).
  $("confirm-text").replaceChildren(
    "Delete the reminder “", userText(entry.title), "” (", userText(entry.id), ") of session ",
    userText(entry.sessionId), "? This cannot be undone; a message already delivered stays in the session.");
  $("confirm").returnValue = "";
  $("confirm").showModal();
});

$("confirm").addEventListener("close", async () => {
  if ($("confirm").returnValue !== "delete") {
    $("delete").focus();
    return;
  }
  const d = state.detail;
  if (!d) return;
  try {
    await api.remove(d.sessionId, d.id);
  } catch (err) {
    fail($("detail-message"), err);
    return;
  }
  state.detail = null;
  state.flash = `Deleted “${isolated(d.entry.title)}”.`;
  location.hash = "#/";
});

// --- live updates --------------------------------------------------------------------------

function onChanged(data) {
  if (!$("catalog").hidden) {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(loadCatalog, 200);
  }
  const d = state.detail;
  if ($("detail").hidden || !d) return;
  if (data && data.id !== d.id) return; // null: a reset, so anything may have changed
  if (data && data.kind === "deleted" && !state.edit) return showDeleted();
  if (state.edit) {
    state.edit.changedOnServer = true;
    const notice = $("server-notice");
    notice.textContent = data && data.kind === "deleted"
      ? "This reminder was deleted on the server while you were editing."
      : "This reminder changed on the server while you were editing. Your edit is kept; saving will show what changed.";
    notice.hidden = false;
    return;
  }
  refreshDetail();
}

function startLive() {
  if (state.stopEvents) return;
  state.stopEvents = followEvents(
    (event, data) => {
      if (event === "schedule/changed") onChanged(data);
      else if (event === "schedule/reset") onChanged(null);
    },
    (s) => {
      if (s === "unauthorized") return signOut("The token was refused; sign in again.");
      $("live").textContent = s === "live" ? "Live updates on" : "Live updates reconnecting…";
    },
  );
}

// --- routing -------------------------------------------------------------------------------

function route() {
  if (!getToken()) return signOut("");
  const m = /^#\/task\/([^/]+)\/([^/]+)$/.exec(location.hash);
  const session = m && safeDecode(m[1]);
  const id = m && safeDecode(m[2]);
  if (session !== null && id !== null) return openDetail(session, id);
  show("catalog");
  endEdit();
  loadCatalog();
}

window.addEventListener("hashchange", () => (location.hash.startsWith("#code=") ? signInFromFragment() : route()));
$("zone-note").textContent = `Times are shown in each reminder's zone and in yours (${LOCAL_ZONE}).`;
/** Exchange a #code= sign-in code (on load, or pasted into a tab already on the page). */
async function signInFromFragment() {
  const outcome = await takeFragmentCode();
  if (getToken()) startLive();
  route();
  if (outcome === "refused") {
    $("signin-error").textContent = "That sign-in link is used up or expired; paste the token or get a new link.";
  }
}

signInFromFragment();
