import { Counter, type CounterConfiguration, Histogram, type HistogramConfiguration } from "prom-client";

const LABEL_NAMES = ["method", "route", "status_class"] as const;
type Label = (typeof LABEL_NAMES)[number];
type Labels = Record<Label, string>;
/** One series: its requests, their seconds summed, and how many fell in each bucket (not cumulative; the last is +Inf). */
type Series = { labels: Labels; count: number; sum: number; buckets: number[] };
/** What a Histogram hands its registry, as prom-client types it. */
type Exported = Awaited<ReturnType<Histogram<Label>["get"]>>;
type Value = Exported["values"][number];
/** What a tally's Counter and Histogram read when scraped, and clear when reset. */
type Source = { readonly bounds: readonly number[]; series(): readonly Series[]; clear(): void };

/** A status code's class (`2xx` … `5xx`): a handful of series a route, whatever codes it answers. */
export const statusClass = (statusCode: number): string => `${Math.floor(statusCode / 100)}xx`;

/**
 * HTTP requests counted and timed as plain numbers on the request path, and turned into
 * prom-client's values only when scraped (`counter`, `histogram`). prom-client's Counter.inc and
 * Histogram.observe, called for each request, were a large share of a GET by id's CPU
 * (docs/benchmarks.md): each call checks the labels, builds their key string and looks it up, and
 * files the duration under its bucket's bound as a string property. The two metrics share the
 * tally, so resetting either (as `registry.resetMetrics()` does both) empties both.
 */
export class RequestTally {
  readonly #bounds: readonly number[];
  // Route, then method, then status class (the code's first digit). A route's pattern and a method
  // are the same string objects request after request, so these lookups hash no new string.
  readonly #routes = new Map<string, Map<string, (Series | undefined)[]>>();
  // The same series in the order their first request came, the order prom-client lists its own in.
  readonly #series: Series[] = [];
  readonly #source: Source;

  /** `bounds`: the histogram's buckets' upper bounds, in seconds, ascending. */
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.#source = {
      bounds,
      series: () => this.#series,
      clear: () => {
        this.#routes.clear();
        this.#series.length = 0;
      },
    };
  }

  /** One request answered: its method, its route's pattern (or `unmatched`), its status code and its time in seconds. */
  record(method: string, route: string, statusCode: number, seconds: number): void {
    let methods = this.#routes.get(route);
    if (!methods) {
      methods = new Map();
      this.#routes.set(route, methods);
    }
    let classes = methods.get(method);
    if (!classes) {
      classes = [];
      methods.set(method, classes);
    }
    const digit = Math.floor(statusCode / 100);
    let series = classes[digit];
    if (!series) {
      series = {
        labels: { method, route, status_class: statusClass(statusCode) },
        count: 0,
        sum: 0,
        buckets: Array(this.#bounds.length + 1).fill(0),
      };
      classes[digit] = series;
      this.#series.push(series);
    }
    series.count++;
    series.sum += seconds;
    // As prom-client files it: the first bucket whose bound the value does not exceed.
    let bucket = 0;
    while (bucket < this.#bounds.length && seconds > this.#bounds[bucket]!) bucket++;
    series.buckets[bucket]!++;
  }

  /** A prom-client Counter of the requests, read from this tally when scraped. */
  counter(config: Omit<CounterConfiguration<Label>, "labelNames" | "collect">): Counter<Label> {
    return new TalliedCounter(this.#source, { ...config, labelNames: LABEL_NAMES });
  }

  /** A prom-client Histogram of the requests' seconds, read from this tally when scraped. */
  histogram(config: Omit<HistogramConfiguration<Label>, "labelNames" | "buckets" | "collect">): Histogram<Label> {
    return new TalliedHistogram(this.#source, { ...config, labelNames: LABEL_NAMES, buckets: [...this.#bounds] });
  }
}

/** prom-client's Counter with a RequestTally's counts in place of its own increments. */
class TalliedCounter extends Counter<Label> {
  readonly #source: Source;

  constructor(source: Source, config: CounterConfiguration<Label>) {
    super(config);
    this.#source = source;
  }

  override async get(): Promise<Awaited<ReturnType<Counter<Label>["get"]>>> {
    super.reset(); // prom-client's own values only: the tally holds the counts
    for (const s of this.#source.series()) this.inc(s.labels, s.count);
    return super.get();
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets the metric before this class has set its source.
    if (#source in this) this.#source.clear();
  }
}

/** prom-client's Histogram with a RequestTally's values in place of its own observations. */
class TalliedHistogram extends Histogram<Label> {
  readonly #source: Source;
  readonly #name: string;
  readonly #help: string;

  constructor(source: Source, config: HistogramConfiguration<Label>) {
    super(config);
    this.#source = source;
    this.#name = config.name;
    this.#help = config.help;
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets the metric before this class has set its source.
    if (#source in this) this.#source.clear();
  }

  /**
   * What the registry renders as text (it asks for this where a metric has it), and what prom-client's
   * Histogram.get() gives getMetricsAsJSON with each series' labels merged into each value's.
   */
  async getForPromString(): Promise<Exported> {
    // prom-client's types ask for the metric's collect function too, which its own Histogram does not
    // give, and type `type` as an enum, where its registry writes the string into the text.
    const type = "histogram" as unknown as Exported["type"];
    const exported: Omit<Exported, "collect"> = { name: this.#name, help: this.#help, type, values: this.#values(), aggregator: "sum" };
    return exported as Exported;
  }

  /**
   * As prom-client's Histogram hands them to its registry: per series, each bucket's cumulative
   * count under `le`, then +Inf, the sum and the count, the series' own labels as `sharedLabels`;
   * the buckets' exemplar null, as prom-client's are where exemplars are off.
   */
  #values(): Value[] {
    const values: Value[] = [];
    const value = (labels: Record<string, string | number>, v: number, metricName: string, sharedLabels: Labels, exemplar?: null) =>
      ({ labels, sharedLabels, value: v, metricName, exemplar }) as Value;
    const { bounds } = this.#source;
    for (const s of this.#source.series()) {
      let cumulative = 0;
      for (const [i, le] of bounds.entries()) {
        cumulative += s.buckets[i]!;
        values.push(value({ le }, cumulative, `${this.#name}_bucket`, s.labels, null));
      }
      values.push(value({ le: "+Inf" }, s.count, `${this.#name}_bucket`, s.labels, null));
      values.push(value({}, s.sum, `${this.#name}_sum`, s.labels));
      values.push(value({}, s.count, `${this.#name}_count`, s.labels));
    }
    return values;
  }
}
