/**
 * How often the agent tries again to start enrollment when enroll.dir cannot be used (a USB stick
 * or share not mounted yet). Apart from layout.ts because the daemon, `status` and `doctor` all
 * name it, and `status` must not load the enrollment folders' code (node:fs/promises) to say it.
 */
export const ENROLL_DIR_RETRY_MS = 30_000;
