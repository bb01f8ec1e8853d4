/**
 * Structured logs, written by the host's logger tagged with the plugin's name and the request:
 * `log.info('created', { deployment: name })`. Field values that are not strings are written as
 * JSON. `console.*` is forwarded here too (see `console.ts`).
 */
import * as raw from './raw.ts';

/** Severity of a log line. */
export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** Key-value fields of a log line. */
export type Fields = Record<string, unknown>;

/** A field value as the host takes it: strings as they are, anything else as JSON. */
export function formatValue(value: unknown): string {
  if (typeof value === 'string') {
    return value;
  }
  if (value instanceof Error) {
    return `${value.name}: ${value.message}`;
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Writes one log line at `level` with key-value fields. */
export function write(level: Level, message: string, fields: Fields = {}): void {
  const pairs = Object.entries(fields).map(([key, value]): [string, string] => [
    key,
    formatValue(value),
  ]);
  raw.logger.log(level, message, pairs);
}

/** The host's logger, one method per level. */
export const log = {
  /** Logs at trace level. */
  trace: (message: string, fields?: Fields) => write('trace', message, fields),
  /** Logs at debug level. */
  debug: (message: string, fields?: Fields) => write('debug', message, fields),
  /** Logs at info level. */
  info: (message: string, fields?: Fields) => write('info', message, fields),
  /** Logs at warn level. */
  warn: (message: string, fields?: Fields) => write('warn', message, fields),
  /** Logs at error level. */
  error: (message: string, fields?: Fields) => write('error', message, fields),
};
