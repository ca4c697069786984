// Pure time formatting of the task page: instants in a zone, with its offset, and relative to
// now. Rule descriptions come from the server (`description` in the API's record views). No DOM
// access here, so the browser tests can call every function directly.

function pad2(n) {
  return String(n).padStart(2, "0");
}

const formatters = new Map();

function partsIn(ms, zone) {
  let fmt = formatters.get(zone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      weekday: "short",
    });
    formatters.set(zone, fmt);
  }
  const out = {};
  for (const p of fmt.formatToParts(new Date(ms))) out[p.type] = p.value;
  return out;
}

/** The UTC offset of `zone` at instant `ms`, as "+02:00". */
export function offsetText(ms, zone) {
  const p = partsIn(ms, zone);
  const wall = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour % 24, +p.minute, +p.second);
  const minutes = Math.round((wall - Math.floor(ms / 1000) * 1000) / 60000);
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  return `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

/** "2026-05-04 09:30 Mon" (seconds shown only when not zero) in `zone`. */
export function formatIn(value, zone) {
  const ms = typeof value === "number" ? value : Date.parse(value);
  const p = partsIn(ms, zone);
  const sec = p.second === "00" ? "" : `:${p.second}`;
  return `${p.year}-${p.month}-${p.day} ${pad2(+p.hour % 24)}:${p.minute}${sec} ${p.weekday}`;
}

/** A time stated with its zone and offset: "2026-05-04 09:30 Mon (Europe/Berlin, +02:00)". */
export function formatZoned(value, zone) {
  const ms = typeof value === "number" ? value : Date.parse(value);
  return `${formatIn(ms, zone)} (${zone}, ${offsetText(ms, zone)})`;
}

export function formatUtc(value) {
  return `${formatIn(value, "UTC")} UTC`;
}

/** "in 3 h", "in 25 min", "2 d ago", "now": the largest unit, rounded down. */
export function relative(value, now) {
  const ms = typeof value === "number" ? value : Date.parse(value);
  const diff = ms - now;
  const abs = Math.abs(diff);
  let text;
  if (abs < 60_000) return diff >= 0 ? "in under a minute" : "just now";
  if (abs < 3_600_000) text = `${Math.floor(abs / 60_000)} min`;
  else if (abs < 86_400_000) text = `${Math.floor(abs / 3_600_000)} h`;
  else text = `${Math.floor(abs / 86_400_000)} d`;
  return diff >= 0 ? `in ${text}` : `${text} ago`;
}

export function viewerZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}
