/**
 * An orchestrator's health check: a GET of a URL every `everyMs`, each on a fresh connection and
 * given `timeoutMs` to answer, whether or not the one before has. What a probe that got no answer
 * in time says is kept.
 */
import { get } from 'node:http';

export interface Probe {
  /** Milliseconds from sending to the answer's headers, or undefined when none came in time. */
  ms: number | undefined;
  status?: number;
  missed?: string;
}

export function startProber(url: string, { everyMs = 500, timeoutMs = 1000 } = {}) {
  const probes: Promise<Probe>[] = [];
  const probe = () =>
    new Promise<Probe>((resolve) => {
      const started = performance.now();
      const req = get(url, { agent: false }, (res) => {
        res.resume();
        resolve({ ms: Math.round(performance.now() - started), status: res.statusCode });
      });
      req.on('error', (error) => resolve({ ms: undefined, missed: error.message }));
      const timer = setTimeout(
        // The verdict waits for this turn's I/O (setImmediate runs after it): an answer that arrived
        // while this process itself was held up counts as answered, as it would for a real prober.
        () =>
          setImmediate(() => {
            resolve({ ms: undefined, missed: `no answer in ${timeoutMs} ms` });
            req.destroy();
          }),
        timeoutMs,
      );
      req.once('close', () => clearTimeout(timer));
    });
  const timer = setInterval(() => probes.push(probe()), everyMs);
  probes.push(probe());
  return {
    /** Probes sent so far. */
    get sent() {
      return probes.length;
    },
    /** Stops probing; the probes once all of them are settled. */
    async stop(): Promise<Probe[]> {
      clearInterval(timer);
      return Promise.all(probes);
    },
  };
}
