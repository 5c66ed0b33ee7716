/**
 * What a systemd unit of the agent gives the daemon's node: the NODE_OPTIONS of its Environment=
 * and the node flags of its ExecStart= (the words starting with '-' between node and the program).
 * The checkout's unit (systemd/terminal-agent.service) and the package's (packaging/unit.sh's
 * output) are both read with it, so the tests start node as each unit would.
 */
export function unitNodeFlags(unitText: string): { nodeOptions: string; args: string[] } {
  const nodeOptions = /^Environment="?NODE_OPTIONS=(.*?)"?$/m.exec(unitText)?.[1];
  const execStart = /^ExecStart=\S+ ((?:-\S+ )*)/m.exec(unitText);
  if (nodeOptions === undefined || !execStart) throw new Error('the unit has no NODE_OPTIONS= or no ExecStart= line');
  return { nodeOptions, args: execStart[1]!.split(' ').filter(Boolean) };
}
