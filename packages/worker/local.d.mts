/** The workerd binary of the installed `workerd` package. */
export function workerdBinary(): string;

export interface LocalWorker {
  url: string;
  pid: number | undefined;
  /** What the Worker wrote (console.log on stdout, errors on stderr), in order. */
  output(): string;
  stop(): Promise<void>;
}

/** workerd serving dist/worker.js on 127.0.0.1 (a free port by default) with these text bindings, once /health answers. */
export function startWorkerd(options: { bindings: Record<string, string>; port?: number; timeoutMs?: number }): Promise<LocalWorker>;
