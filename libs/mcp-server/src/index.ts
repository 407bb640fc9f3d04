export { createTicketsMcpServer, registerTicketTools, TICKET_TOOL_INPUTS, TICKET_TOOL_NAMES } from './ticket-tools';
export type { TicketToolName, TicketToolsOptions, ToolCallOutcome } from './ticket-tools';
export { toolIdempotencyKey } from './backend';
export type { CancelToolResult, CreateToolResult, TicketToolsBackend, ToolRead, ToolWrite } from './backend';
export { clientBackend } from './client-backend';
export { toolError } from './tool-errors';
export { runStdioServer } from './stdio-server';
export { VERSION } from './version';
