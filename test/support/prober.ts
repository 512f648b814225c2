/**
 * An orchestrator's health check: a GET of a URL every `everyMs`, each on a fresh connection and
 * given `timeoutMs` to answer, whether or not the one before has. What a probe that got no answer
 * in time says is kept.
 *
 * The time is the server's: it runs from when the request has left (written to the socket) to the
 * answer's headers, and a verdict of "no answer" waits for this process's pending I/O. So a test
 * process that is itself held up on a busy machine (it may run the server's peers) neither blames
 * the server for a request it had not sent yet nor misses an answer that came while it was busy.
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
      let sentAt = performance.now(); // when the request has left; until then, when it was made
      const timers: NodeJS.Timeout[] = [];
      const settle = (result: Probe) => {
        for (const timer of timers) clearTimeout(timer);
        resolve(result);
      };
      // After the timer, setImmediate: the verdict comes after this turn's I/O, where an answer
      // that arrived while this process was busy is read first.
      const giveUp = (ms: number, missed: string) =>
        timers.push(
          setTimeout(
            () =>
              setImmediate(() => {
                settle({ ms: undefined, missed });
                req.destroy();
              }),
            ms,
          ),
        );
      const req = get(url, { agent: false }, (res) => {
        res.resume();
        settle({ ms: Math.round(performance.now() - sentAt), status: res.statusCode });
      });
      req.on('error', (error) => settle({ ms: undefined, missed: error.message }));
      req.once('finish', () => {
        sentAt = performance.now();
        giveUp(timeoutMs, `no answer in ${timeoutMs} ms`);
      });
      // A request that cannot even be sent (no connection) is a miss too, in the end.
      giveUp(timeoutMs * 10, `not sent in ${timeoutMs * 10} ms`);
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
