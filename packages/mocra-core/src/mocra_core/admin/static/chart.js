// A small line chart on a canvas: a few series over a fixed time window ending now, with a legend.

/** The smallest of 1, 2, 2.5, 5 x 10^n that is at least `value`. */
export function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function formatRate(value) {
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2).replace(/\.?0+$/, "") || "0";
}

/** "-30s", "-2m", "now". */
function ago(seconds) {
  if (seconds === 0) return "now";
  return seconds < 60 ? `-${seconds}s` : `-${+(seconds / 60).toFixed(1)}m`;
}

/**
 * Draws `series` ({ key, label, color: "--css-variable" }) of `points` ({ t, [key]: value }) up to `now`: over
 * the time the points cover, at least a minute and at most `windowSeconds`; the legend shows the latest values.
 */
export class LineChart {
  constructor(canvas, legend, series, windowSeconds = 600) {
    this.canvas = canvas;
    this.legend = legend;
    this.series = series;
    this.windowSeconds = windowSeconds;
    this.points = [];
    this.now = 0;
    this.legendValues = new Map();
    for (const s of series) {
      const item = document.createElement("span");
      item.className = "legend-item";
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = `var(${s.color})`;
      const value = document.createElement("output");
      value.textContent = "-";
      item.append(swatch, `${s.label} `, value);
      legend.append(item);
      this.legendValues.set(s.key, value);
    }
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  update(points, now) {
    this.points = points;
    this.now = now;
    const last = points.at(-1);
    for (const s of this.series) this.legendValues.get(s.key).textContent = last ? formatRate(last[s.key]) : "-";
    this.canvas.setAttribute(
      "aria-label",
      this.series.map((s) => `${s.label}: ${last ? formatRate(last[s.key]) : "no data yet"}`).join(", "),
    );
    this.draw();
  }

  draw() {
    const { canvas } = this;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (!width || !height) return;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);

    const style = getComputedStyle(canvas);
    const ink = style.getPropertyValue("--muted").trim() || "#888";
    const grid = style.getPropertyValue("--grid").trim() || "#ddd";
    const left = 44;
    const right = 8;
    const top = 8;
    const bottom = 20;
    const plotW = width - left - right;
    const plotH = height - top - bottom;
    const end = this.now || Date.now() / 1000;
    const first = this.points.length ? this.points[0].t : end;
    const span = Math.min(this.windowSeconds, Math.max(60, Math.ceil((end - first) / 60) * 60));
    const start = end - span;
    const visible = this.points.filter((p) => p.t >= start);
    let max = 0;
    for (const p of visible) for (const s of this.series) max = Math.max(max, p[s.key]);
    const top_ = niceCeiling(max * 1.1);
    const x = (t) => left + ((t - start) / span) * plotW;
    const y = (v) => top + plotH - (v / top_) * plotH;

    ctx.font = "11px system-ui, sans-serif";
    ctx.lineWidth = 1;
    ctx.strokeStyle = grid;
    ctx.fillStyle = ink;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let i = 0; i <= 4; i += 1) {
      const value = (top_ * i) / 4;
      const yy = Math.round(y(value)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(left, yy);
      ctx.lineTo(left + plotW, yy);
      ctx.stroke();
      ctx.fillText(formatRate(value), left - 6, yy);
    }
    ctx.textBaseline = "top";
    const step = [10, 15, 30, 60, 120, 300, 600].find((s) => span / s <= 6) ?? span;
    for (let back = Math.floor(span / step) * step; back >= 0; back -= step) {
      ctx.textAlign = back === 0 ? "right" : back === span ? "left" : "center";
      ctx.fillText(ago(back), x(end - back), top + plotH + 5);
    }

    ctx.lineWidth = 2;
    ctx.lineJoin = "round";
    for (const s of this.series) {
      ctx.strokeStyle = style.getPropertyValue(s.color).trim() || "#36c";
      ctx.beginPath();
      visible.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p[s.key])) : ctx.moveTo(x(p.t), y(p[s.key]))));
      ctx.stroke();
    }
  }
}
