// The subpath `@tickets/event-consumer/warm-connections`: warming a pool's connections at start.
export { warmConnections, type WarmFailure, type WarmReport } from './warm-connections.repository';
