// Pure helpers of the task page: human rule descriptions and time formatting.
// No DOM access here, so the browser tests can call every function directly.

const WEEKDAY_NAMES = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function pad2(n) {
  return String(n).padStart(2, "0");
}

/** "09:30:00.000" -> "09:30", "09:30:15.000" -> "09:30:15". */
export function shortTime(time) {
  const [h, m, rest] = time.split(":");
  const s = (rest || "00").split(".")[0];
  return s === "00" ? `${h}:${m}` : `${h}:${m}:${s}`;
}

/** 900 -> "15 min", 5400 -> "1 h 30 min", 86400 -> "1 day", 61 -> "1 min 1 s". */
export function describeSeconds(total) {
  const parts = [];
  const days = Math.floor(total / 86400);
  const hours = Math.floor((total % 86400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (days) parts.push(days === 1 ? "1 day" : `${days} days`);
  if (hours) parts.push(`${hours} h`);
  if (minutes) parts.push(`${minutes} min`);
  if (seconds) parts.push(`${seconds} s`);
  return parts.join(" ") || "0 s";
}

/** ISO weekdays (1 = Monday) -> "every day" / "every weekday" / "Mon, Wed, Fri" / "Mon-Thu". */
function weekdayPhrase(days) {
  const set = [...new Set(days)].sort((a, b) => a - b);
  const key = set.join(",");
  if (key === "1,2,3,4,5,6,7") return "every day";
  if (key === "1,2,3,4,5") return "every weekday";
  if (key === "6,7") return "every Saturday and Sunday";
  return "every " + compressRuns(set, (d) => WEEKDAY_NAMES[d - 1]);
}

/** [1,2,3,5] with names -> "Mon-Wed, Fri" (runs of three or more become a range). */
function compressRuns(sorted, name) {
  const out = [];
  let i = 0;
  while (i < sorted.length) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    if (j - i >= 2) out.push(`${name(sorted[i])}-${name(sorted[j])}`);
    else for (let k = i; k <= j; k++) out.push(name(sorted[k]));
    i = j + 1;
  }
  return out.join(", ");
}

// Expand one cron field (a star, "5", "1-5", a star with a step, "0-45/15", lists) to its
// sorted values, or null when it is not understood.
function cronValues(field, lo, hi) {
  const values = new Set();
  for (const part of field.split(",")) {
    const m = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) return null;
    let a = lo;
    let b = hi;
    if (m[1] !== "*") {
      a = Number(m[2]);
      b = m[3] === undefined ? (m[4] === undefined ? a : hi) : Number(m[3]);
    }
    const step = m[4] === undefined ? 1 : Number(m[4]);
    if (step < 1 || a < lo || b > hi || a > b) return null;
    for (let v = a; v <= b; v += step) values.add(v);
  }
  return [...values].sort((x, y) => x - y);
}

/** Evenly spaced values covering the whole field from its lowest value: the step, else 0. */
function wholeStep(values, lo, hi) {
  if (values.length < 2 || values[0] !== lo) return 0;
  const step = values[1] - values[0];
  for (let i = 1; i < values.length; i++) if (values[i] - values[i - 1] !== step) return 0;
  return values[values.length - 1] + step > hi ? step : 0;
}

function hourRange(hours) {
  // Contiguous hours 9..17 -> "9-17"; otherwise the list.
  const contiguous = hours.every((h, i) => i === 0 || h === hours[i - 1] + 1);
  if (contiguous && hours.length > 2) return `${hours[0]}-${hours[hours.length - 1]}`;
  return hours.join(",");
}

function cronDays(dom, month, dow) {
  // Two phrasings: `full` after a fixed time ("every weekday at 09:00"), `compact` after a
  // repeating one ("every 15 min 9-17 Mon-Fri").
  const doms = cronValues(dom, 1, 31);
  const months = cronValues(month, 1, 12);
  const dows = cronValues(dow, 0, 7);
  if (!doms || !months || !dows) return null;
  if (dom !== "*" && dow !== "*") return null; // cron's day-of-month OR day-of-week: say it raw
  let full = "every day";
  let compact = "";
  if (dow !== "*") {
    const iso = [...new Set(dows.map((d) => (d === 0 ? 7 : d)))].sort((a, b) => a - b);
    full = weekdayPhrase(iso);
    compact = compressRuns(iso, (d) => WEEKDAY_NAMES[d - 1]);
  } else if (dom !== "*") {
    full = `on day ${compressRuns(doms, String)} of the month`;
    compact = full;
  }
  if (month !== "*") {
    const inMonths = `in ${compressRuns(months, (m) => MONTH_NAMES[m - 1])}`;
    full += ` ${inMonths}`;
    compact = compact ? `${compact} ${inMonths}` : inMonths;
  }
  return { full, compact };
}

/** A five-field cron expression in words, or null when the shape is not one we can say. */
export function describeCron(expression) {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return null;
  const [min, hour, dom, month, dow] = fields;
  const mins = cronValues(min, 0, 59);
  const hours = cronValues(hour, 0, 23);
  const days = cronDays(dom, month, dow);
  if (!mins || !hours || !days) return null;
  if (mins.length === 1 && hours.length <= 4) {
    const times = hours.map((h) => `${pad2(h)}:${pad2(mins[0])}`).join(", ");
    return `${days.full} at ${times}`;
  }
  let head;
  const step = wholeStep(mins, 0, 59);
  if (min === "*") head = "every minute";
  else if (step) head = `every ${step} min`;
  else if (mins.length === 1) head = `every hour at :${pad2(mins[0])}`;
  else return null;
  const hourText = hour === "*" ? "" : ` ${hourRange(hours)}`;
  return `${head}${hourText}${days.compact ? " " + days.compact : ""}`;
}

/** The human description of a record's rule; every local-time rule names its zone. */
export function describeRule(record) {
  const zone = record.timeZone ? ` (${record.timeZone})` : "";
  switch (record.kind) {
    case "after":
      return `once, ${describeSeconds(record.afterSeconds)} after it was set, at ${formatUtc(record.scheduledAt)}`;
    case "at":
      return `once at ${formatUtc(record.scheduledAt)}`;
    case "every":
      return `every ${describeSeconds(record.everySeconds)}`;
    case "daily":
      return `every day at ${shortTime(record.time)}${zone}`;
    case "weekly":
      return `${weekdayPhrase(record.weekdays)} at ${shortTime(record.time)}${zone}`;
    case "cron": {
      const words = describeCron(record.expression);
      return words ? `${words}${zone}` : `cron ${record.expression}${zone}`;
    }
    default:
      return String(record.kind);
  }
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
