// @tickets/startup: why a process could not start, said in one line that names the setting to change.
export {
  explainStartupFailure,
  PortUnavailableError,
  type PortSetting,
  type StartupCause,
  type StartupContext,
  type StartupFailure,
} from './startup-failure';
export { listen } from './listen';
export { failStartup } from './fail-startup';
export { stopOnSignals } from './stop-on-signals';
