// `terminal-agent console hash-password`: the console's password as the hash console.password_hash
// takes. Read from stdin (never an argument: it would show in `ps` and the shell history).
import { readStdin, type CommandSpec } from './command.js';
import { writeLine } from './output.js';
import { UsageError } from '../errors.js';
import { hashPassword } from '../util/password-hash.js';

export const consoleCommands: CommandSpec[] = [
  {
    path: ['console', 'hash-password'],
    summary: 'read the web console password from stdin, print the hash for console.password_hash',
    description: `Reads one password from stdin (one trailing line break is removed) and prints its scrypt
hash ($scrypt$ln=15,r=8,p=1$SALT$HASH) for console.password_hash. The password itself is never
stored. Example:  read -rs PW && printf %s "$PW" | terminal-agent console hash-password
A systemd credential (LoadCredential=console_password:PATH) may hold the password or this hash instead.`,
    async run(_args, ctx) {
      const tooLong = () => new UsageError('the password on stdin is longer than 1024 bytes');
      const password = (await readStdin(ctx, 1024, tooLong)).toString('utf8').replace(/\r?\n$/, '');
      if (password === '') throw new UsageError('no password on stdin: pipe it in, e.g. printf %s "$PW" | terminal-agent console hash-password');
      if (password.length < 8) throw new UsageError('the password is shorter than 8 characters: the console may be reachable from the network, choose a longer one');
      writeLine(ctx, await hashPassword(password));
      return 0;
    },
  },
];
