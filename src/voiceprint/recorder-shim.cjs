'use strict';
// node-record-lpcm16 builds its child from a "recorder" module that it require()s by path, and its
// own arecord recorder spawns with the daemon's environment. The agent gives the child its own
// environment (ALSA_CONFIG_PATH, PATH) and an exact sample count, so capture.ts passes this file's
// path as the recorder and puts the ready command in the options; the library still spawns,
// streams and reports the exit. Plain CommonJS because the library loads it with require().
module.exports = function agentRecorder(options) {
  const command = options.agentCommand;
  if (!command || typeof command.cmd !== 'string' || !Array.isArray(command.args)) {
    throw new TypeError('recorder-shim.cjs: options.agentCommand { cmd, args, env } is missing');
  }
  return {
    cmd: command.cmd,
    args: command.args.slice(),
    spawnOptions: command.env ? { env: command.env } : {},
  };
};
