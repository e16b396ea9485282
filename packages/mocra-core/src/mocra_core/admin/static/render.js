// Formatting numbers and filling tables; text only (textContent), never HTML from the server.

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });

/** 12345 -> "12,345". */
export const count = (value) => integer.format(value ?? 0);

/** 3.14159 -> "3.1". */
export const rate = (value) => (value == null ? "-" : decimal.format(value));

/** 1536 -> "1.5 KiB". */
export function bytes(value) {
  let n = value ?? 0;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (n < 1024 || unit === "GiB") return unit === "B" ? `${n} B` : `${decimal.format(n)} ${unit}`;
    n /= 1024;
  }
  return `${n}`;
}

/** 3725 -> "1h 2m 5s". */
export function duration(seconds) {
  let s = Math.max(0, Math.round(seconds ?? 0));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h ${m}m ${s}s` : m ? `${m}m ${s}s` : `${s}s`;
}

/** Sum of an object's values ({} for none). */
export const total = (counts) => Object.values(counts ?? {}).reduce((a, b) => a + b, 0);

/** Set an element's text by id. */
export function setText(id, text) {
  document.getElementById(id).textContent = text;
}

/**
 * Replace a table's body with `rows`; each row is a list of cells: a string/number, or
 * `{ text, className, title, bar }` (`bar`: 0..1, drawn as a proportion bar). `empty` fills an empty table.
 */
export function fillTable(tableId, rows, empty = "none") {
  const table = document.getElementById(tableId);
  const body = table.tBodies[0];
  const columns = table.tHead.rows[0].cells.length;
  const out = [];
  if (!rows.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = columns;
    td.className = "empty";
    td.textContent = empty;
    tr.append(td);
    out.push(tr);
  }
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of row) {
      const td = document.createElement("td");
      const spec = cell !== null && typeof cell === "object" ? cell : { text: cell };
      if (typeof spec.text === "number") td.className = "num";
      if (spec.className) td.className = spec.className;
      if (spec.title) td.title = spec.title;
      if (spec.bar != null) {
        const meter = document.createElement("span");
        meter.className = "meter";
        meter.style.width = `${Math.round(spec.bar * 100)}%`;
        td.append(meter);
      } else {
        td.textContent = typeof spec.text === "number" ? count(spec.text) : String(spec.text ?? "");
      }
      tr.append(td);
    }
    out.push(tr);
  }
  body.replaceChildren(...out);
}
