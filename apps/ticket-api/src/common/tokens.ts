/** Injection tokens shared across the API's modules. */
export const APP_CONFIG = Symbol('APP_CONFIG');
export const LOGGER = Symbol('LOGGER');
export const METRICS = Symbol('METRICS');
