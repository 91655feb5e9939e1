import { Counter, Histogram, type CounterConfiguration, type HistogramConfiguration } from "prom-client";

type Label = "method" | "route" | "status_class";
type Labels = Record<Label, string>;
/** One series: its requests, their seconds summed, and how many fell in each bucket (not cumulative; the last is +Inf). */
type Series = { labels: Labels; count: number; sum: number; buckets: number[] };
/** What a Histogram hands its registry, as prom-client types it. */
type Exported = Awaited<ReturnType<Histogram<Label>["get"]>>;
type Value = Exported["values"][number];

/** A status code's class (`2xx` … `5xx`): a handful of series a route, whatever codes it answers. */
export const statusClass = (statusCode: number): string => `${Math.floor(statusCode / 100)}xx`;

/**
 * HTTP requests counted and timed as plain numbers on the request path, and turned into
 * prom-client's values only when scraped (`counter`, `histogram`). prom-client's Counter.inc and
 * Histogram.observe, called for each request, were a sixth of a GET by id's CPU (docs/benchmarks.md):
 * each call checks the labels, builds their key string and looks it up, and files the duration under
 * its bucket's bound as a string property.
 */
export class RequestTally {
  readonly #bounds: readonly number[];
  // Route, then method, then status class (the code's first digit). A route's pattern and a method
  // are the same string objects request after request, so these lookups hash no new string.
  readonly #routes = new Map<string, Map<string, (Series | undefined)[]>>();
  // The same series in the order their first request came, the order prom-client lists its own in.
  readonly #series: Series[] = [];

  /** `bounds`: the histogram's buckets' upper bounds, in seconds, ascending. */
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
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
    const tally = this;
    return new Counter<Label>({
      ...config,
      labelNames: ["method", "route", "status_class"],
      collect() {
        this.reset();
        for (const s of tally.#series) this.inc(s.labels, s.count);
      },
    });
  }

  /** A prom-client Histogram of the requests' seconds, read from this tally when scraped. */
  histogram(config: Omit<HistogramConfiguration<Label>, "labelNames" | "buckets" | "collect">): Histogram<Label> {
    return new TalliedHistogram(this, { ...config, labelNames: ["method", "route", "status_class"], buckets: [...this.#bounds] });
  }

  /**
   * The histogram's values as prom-client's Histogram gives them to its registry: per series, each
   * bucket's cumulative count under `le`, then +Inf, the sum and the count, the series' own labels as
   * `sharedLabels`.
   */
  values(name: string): Value[] {
    const values: Value[] = [];
    // Buckets carry no exemplar (null), as prom-client's do where exemplars are off.
    const value = (labels: Record<string, string | number>, v: number, metricName: string, sharedLabels: Labels) =>
      ({ labels, value: v, metricName, sharedLabels, ...("le" in labels ? { exemplar: null } : {}) }) as Value;
    for (const s of this.#series) {
      let cumulative = 0;
      for (const [i, le] of this.#bounds.entries()) {
        cumulative += s.buckets[i]!;
        values.push(value({ le }, cumulative, `${name}_bucket`, s.labels));
      }
      values.push(value({ le: "+Inf" }, s.count, `${name}_bucket`, s.labels));
      values.push(value({}, s.sum, `${name}_sum`, s.labels));
      values.push(value({}, s.count, `${name}_count`, s.labels));
    }
    return values;
  }
}

/** prom-client's Histogram with a RequestTally's values in place of its own observations. */
class TalliedHistogram extends Histogram<Label> {
  readonly #tally: RequestTally;
  readonly #name: string;
  readonly #help: string;

  constructor(tally: RequestTally, config: HistogramConfiguration<Label>) {
    super(config);
    this.#tally = tally;
    this.#name = config.name;
    this.#help = config.help;
  }

  /** What the registry renders as text (it asks for this where a metric has it, as prom-client's own Histogram does). */
  async getForPromString(): Promise<Exported> {
    // prom-client's types ask for the metric's collect function too, which its own Histogram does not
    // give, and type `type` as an enum, where its registry writes the string into the text.
    const type = "histogram" as unknown as Exported["type"];
    const exported: Omit<Exported, "collect"> = {
      name: this.#name,
      help: this.#help,
      type,
      aggregator: "sum",
      values: this.#tally.values(this.#name),
    };
    return exported as Exported;
  }

  /** The same values with each series' labels merged into its own, as prom-client's Histogram.get() gives them. */
  override async get(): Promise<Exported> {
    const data = await this.getForPromString();
    const values = data.values.map((v) => {
      const { sharedLabels, labels, ...rest } = v as typeof v & { sharedLabels: Labels };
      return { ...rest, labels: { ...labels, ...sharedLabels } };
    });
    return { ...data, values };
  }
}
