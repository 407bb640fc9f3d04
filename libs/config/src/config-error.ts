/** A configuration that cannot run: the message names every bad variable and what to do. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
