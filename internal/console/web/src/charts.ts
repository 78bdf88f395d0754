// Live charts of the ensemble's load from the servers' own per-second
// samples (GET /ui/api/loads), drawn with uPlot.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Sample } from "./api";
import { h } from "./dom";

/** value is null for a second without data: uPlot leaves a gap. */
type Series = { label: string; stroke: string; value: (ss: Sample[]) => number | null };

interface Chart {
  title: string;
  unit: string;
  series: Series[];
}

const sum = (f: (s: Sample) => number) => (ss: Sample[]) => ss.reduce((a, s) => a + f(s), 0);
const worst = (f: (s: Sample) => number) => (ss: Sample[]) => ss.reduce((a, s) => Math.max(a, f(s)), 0);
const mean = (f: (s: Sample) => number) => (ss: Sample[]) => {
  const xs = ss.filter((s) => s.fsyncs > 0).map(f);
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
};

const CHARTS: Chart[] = [
  { title: "Writes per second (all servers)", unit: "/s", series: [{ label: "writes/s", stroke: "#d62728", value: sum((s) => s.writes) }] },
  { title: "Reads per second (all servers)", unit: "/s", series: [{ label: "reads/s", stroke: "#1f77b4", value: sum((s) => s.reads) }] },
  {
    title: "Request latency (the slowest server)",
    unit: "ms",
    series: [
      { label: "p50 ms", stroke: "#2ca02c", value: worst((s) => s.p50_ms) },
      { label: "p99 ms", stroke: "#9467bd", value: worst((s) => s.p99_ms) },
    ],
  },
  {
    title: "Log fsyncs (mean over servers)",
    unit: "",
    series: [
      { label: "entries per fsync", stroke: "#ff7f0e", value: mean((s) => s.fsync_batch) },
      { label: "fsync ms", stroke: "#8c564b", value: mean((s) => s.fsync_ms) },
    ],
  },
];

/** The charts of the Load tab; update() feeds them the servers' samples. */
export class Charts {
  private plots: uPlot[] = [];
  private boxes: HTMLElement[] = [];

  constructor(private el: HTMLElement) {
    // Each chart is as wide as its box, which the grid sizes.
    new ResizeObserver(() => this.plots.forEach((p, i) => p.setSize({ width: this.width(i), height: 180 }))).observe(el);
  }

  private width(i: number): number {
    return Math.max(200, this.boxes[i].clientWidth - 16);
  }

  update(loads: Record<string, Sample[]>): void {
    // One row per second present on any server, in order.
    const bySecond = new Map<number, Sample[]>();
    for (const ss of Object.values(loads)) {
      for (const s of ss) {
        const t = Math.round(s.t / 1000);
        bySecond.set(t, [...(bySecond.get(t) ?? []), s]);
      }
    }
    const times = [...bySecond.keys()].sort((a, b) => a - b);
    CHARTS.forEach((c, i) => {
      const data: uPlot.AlignedData = [times, ...c.series.map((sr) => times.map((t) => sr.value(bySecond.get(t)!)))];
      if (this.plots[i]) {
        this.plots[i].setData(data);
        return;
      }
      const box = h("figure", { class: "chart", "data-chart": i }, h("figcaption", {}, c.title));
      this.el.append(box);
      this.boxes[i] = box;
      this.plots[i] = new uPlot(
        {
          width: this.width(i),
          height: 180,
          series: [{}, ...c.series.map((sr) => ({ label: sr.label, stroke: sr.stroke, width: 2, spanGaps: true }))],
          axes: [{}, { label: c.unit, size: 56 }],
          scales: { x: { time: true } },
          legend: { live: true },
        },
        data,
        box,
      );
    });
  }
}
