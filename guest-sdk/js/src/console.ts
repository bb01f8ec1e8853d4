/**
 * Forwards `console.*` to the host's logger, since a component has no stdout the host reads:
 * `console.log` and `console.info` log at info, `debug` at debug, `warn` at warn, `error` at
 * error, `trace` at trace. Arguments are joined by spaces, non-strings written as JSON.
 */
import { formatValue, write, type Level } from './log.ts';

const levels: Record<string, Level> = {
  log: 'info',
  info: 'info',
  debug: 'debug',
  warn: 'warn',
  error: 'error',
  trace: 'trace',
};

/** Sends every `console` method that has a log level to the host's logger. */
export function forwardConsole(): void {
  const target = console as unknown as Record<string, unknown>;
  for (const [method, level] of Object.entries(levels)) {
    target[method] = (...args: unknown[]) => write(level, args.map(formatValue).join(' '));
  }
}
