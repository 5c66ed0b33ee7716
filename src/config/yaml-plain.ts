// The YAML library's `parse` alone, for control-socket.ts's dynamic import: importing 'yaml'
// itself there would make its whole namespace an entry of the bundle, and esbuild could then drop
// none of it (stringify, the YAML 1.1 schema...) from the chunk load-config.ts also loads.
export { parse } from 'yaml';
