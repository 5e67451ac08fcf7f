// Numbers, times and names as a person reads them.

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit",
});
const preciseFormat = new Intl.DateTimeFormat(undefined, {
  day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
  timeZoneName: "short",
});
const numberFormat = new Intl.NumberFormat();

export function count(value) {
  return value === null || value === undefined ? "–" : numberFormat.format(value);
}

/** "45 s", "12 min", "3 h 05 min", "2 d 4 h"; null as a dash. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 ? `${hours} h ${String(minutes % 60).padStart(2, "0")} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/** As duration(), to the second below an hour ("8 min 11 s"): hands-on times and TTLs,
 *  where a minute rounded away is a fifth of a review. */
export function preciseDuration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60 || s >= 3600) return duration(s);
  const rest = s % 60;
  return rest ? `${Math.floor(s / 60)} min ${rest} s` : `${s / 60} min`;
}

const percentFormat = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 });
const decimalFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** A share (0.25) as "25%"; null as a dash. */
export function percent(share) {
  return share === null || share === undefined ? "–" : percentFormat.format(share);
}

/** A rate or a mean, to one decimal: "3.4"; null as a dash. */
export function decimal(value) {
  return value === null || value === undefined ? "–" : decimalFormat.format(value);
}

/** Minutes of work a day: "216 min", "1,440 min", "−24 min"; under ten, to a tenth
 *  ("0.4 min"), so that a small demand does not read as none. */
export function minutesPerDay(minutes) {
  if (minutes === null || minutes === undefined) return "–";
  const size = Math.abs(minutes);
  const shown = size < 10 ? decimalFormat.format(size) : numberFormat.format(Math.round(size));
  return `${minutes < 0 && shown !== "0" ? "−" : ""}${shown} min`;
}

/** A countdown: "4:59", "1:02:03". */
export function countdown(milliseconds) {
  const total = Math.max(0, Math.ceil(milliseconds / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

export function clock(iso) {
  return iso ? timeFormat.format(new Date(iso)) : "–";
}

export function when(iso) {
  return iso ? dateTimeFormat.format(new Date(iso)) : "–";
}

/** As when(), to the second and with the time zone: for a title, where order within a
 *  minute matters. */
export function preciseWhen(iso) {
  return iso ? preciseFormat.format(new Date(iso)) : "–";
}

/** "3 min ago", "in 2 h 10 min". */
export function relative(iso, now = Date.now()) {
  if (!iso) return "–";
  const seconds = (new Date(iso).getTime() - now) / 1000;
  return seconds >= 0 ? `in ${duration(seconds)}` : `${duration(-seconds)} ago`;
}

/** NEEDS_REVIEW -> "Needs review"; date_of_birth -> "Date of birth"; faceMatch -> "Face match". */
export function words(name) {
  if (!name) return "";
  const spaced = String(name)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

export function verdictWord(verdict) {
  return { APPROVE: "Approve", REJECT: "Reject", ESCALATE: "Escalate" }[verdict] ?? words(verdict);
}

/** The first and last characters of a long hash, for a glance; the whole one goes in a title. */
export function shortHash(hash) {
  return hash && hash.length > 20 ? `${hash.slice(0, 10)}…${hash.slice(-6)}` : hash;
}

export function verdictDone(verdict) {
  return { APPROVE: "Approved", REJECT: "Rejected", ESCALATE: "Escalated" }[verdict] ?? words(verdict);
}
