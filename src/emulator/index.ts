// The service emulator's public entry points (see types.ts for the shapes).
export { startEmulator, makeCredentials } from './server.js';
export { parseFaultSpec } from './faults.js';
export { VOICES } from './voices.js';
export type * from './types.js';
