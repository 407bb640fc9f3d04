// The subpath `@tickets/event-consumer/warm-connections`: warming a pool's connections at start.
export { warmConnections, type WarmReport, type WarmStatement } from './warm-connections.repository';
