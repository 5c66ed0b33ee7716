import { readFile } from 'node:fs/promises';
import type { CliContext } from './command.js';
import { writeWarning } from './output.js';
import type { AgentConfig } from '../config/schema.js';
import { FaceCheckUnavailableError, FaceQualityError, InvalidInputError } from '../errors.js';
import type { FaceCheckRecord } from '../enroll/face-check-step.js';

// The face check for `faces add` and `faces update IMAGE`: the same step and thresholds as the
// enrollment folder (enroll.face_check), so a photo refused there is refused here too. A refusal
// exits 65 (TA_ERR_FACE_CHECK) with the operator's sentence; in warn mode the warning is printed
// and the image is sent. The worker lives for this one image.

export async function checkFaceImage(ctx: CliContext, json: boolean, config: AgentConfig, path: string, shownAs: string): Promise<FaceCheckRecord | undefined> {
  const settings = config.enroll.face_check;
  if (settings.mode === 'off') return undefined;
  const [{ createFaceChecker }, { createFaceCheckStep }] = await Promise.all([import('../facecheck/index.js'), import('../enroll/face-check-step.js')]);
  const checker = createFaceChecker();
  try {
    const out = await createFaceCheckStep(checker, settings)!(await readFile(path), shownAs);
    const details = { face_check: out.record };
    if (out.refusal?.code === 'TA_ERR_FACE_CHECK') throw new FaceQualityError(out.refusal.message, { details });
    if (out.refusal?.code === 'TA_ERR_BAD_IMAGE') throw new InvalidInputError(out.refusal.message, { details });
    if (out.refusal) throw new FaceCheckUnavailableError(out.refusal.message, { details });
    if (out.record.verdict === 'warned') {
      writeWarning(ctx, json, { text: `face check (enroll.face_check.mode: warn, sent anyway): ${out.record.message ?? ''}`, code: 'TA_WARN_FACE_CHECK', details });
    }
    return out.record;
  } finally {
    await checker.stop();
  }
}
