export { FaultProxy } from './fault-proxy';
export type { ExchangeInfo, Fault, FaultProxyOptions, FaultProxyStats, FaultRates } from './fault-proxy';
export { TcpCutProxy } from './tcp-cut-proxy';
