export { createEventBus, TRANSIENT_TYPES, type AgentEvent, type EventBus, type EventPublisher } from './event-bus.js';
export { serveEventStream, formatEvent, type EventStreamOptions } from './sse.js';
