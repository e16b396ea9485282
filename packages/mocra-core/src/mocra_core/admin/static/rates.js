// Rates from successive snapshots: each counter's growth per second, kept for the last minutes.

/** How far back the rate history goes, in seconds. */
export const WINDOW_SECONDS = 600;

/** The counters a rate is computed for, read from a snapshot's whole-job `stats`. */
export const COUNTERS = {
  pages: (stats) => stats.responses ?? 0,
  items: (stats) => stats.items ?? 0,
  errors: (stats) => stats.errors ?? 0,
  retries: (stats) => stats.retries ?? 0,
  dead: (stats) => stats.dead_lettered ?? 0,
};

/**
 * Turns a stream of snapshots into per-second rates.
 *
 * `add(time, stats)` takes a snapshot's time (Unix seconds) and counts; `points` holds one point per snapshot
 * after the first: `{ t, pages, items, errors, retries, dead }` in units per second, averaged over the last
 * `smoothing` seconds so that a burst between two snapshots does not look like a spike.
 */
export class RateTracker {
  constructor(smoothing = 3) {
    this.smoothing = smoothing;
    this.reset();
  }

  reset() {
    this.samples = []; // { t, counts }
    this.points = [];
  }

  add(time, stats) {
    const counts = {};
    for (const [name, read] of Object.entries(COUNTERS)) counts[name] = read(stats);
    const last = this.samples.at(-1);
    if (last && (time <= last.t || counts.pages < last.counts.pages)) {
      if (time <= last.t) return this.latest();
      this.reset(); // the counters went back: another job or a reset job
    }
    this.samples.push({ t: time, counts });
    this.samples = this.samples.filter((s) => s.t >= time - WINDOW_SECONDS - this.smoothing);
    if (this.samples.length > 1) {
      // The newest sample at least `smoothing` seconds old, else the oldest one.
      let base = this.samples[0];
      for (const sample of this.samples) {
        if (sample.t > time - this.smoothing) break;
        base = sample;
      }
      const dt = time - base.t;
      const point = { t: time };
      for (const name of Object.keys(COUNTERS)) point[name] = Math.max(0, (counts[name] - base.counts[name]) / dt);
      this.points.push(point);
      this.points = this.points.filter((p) => p.t >= time - WINDOW_SECONDS);
    }
    return this.latest();
  }

  /** The newest rates, or null before the second snapshot. */
  latest() {
    return this.points.at(-1) ?? null;
  }
}
