export { loadConfig, loadConfigOrExit, ConfigError } from './config';
export type { AppConfig, EdgeConfig } from './config';
export { parseDuration } from './duration';
