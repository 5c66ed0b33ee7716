import { useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { useEvents } from '../events';
import { useResource } from '../resource';
import { dbfs, localTime } from '../format';
import type { SpeakerRow, VoiceprintRow } from '../types';
import { Ago, Badge, Card, Empty, ErrorBox, Loading, PageHead, type Tone } from '../ui';

// Voiceprints and trained speakers: the agent keeps its own registries of both (the cloud API has no
// list call). A voiceprint can be recorded here on the terminal's microphone, with the level the
// daemon measures shown live so the person knows to come closer or speak up.

interface Level {
  elapsed_ms: number;
  remaining_ms: number;
  /** null for digital silence. */
  rms_dbfs: number | null;
  peak_dbfs: number | null;
  hint: 'closer' | 'louder' | 'too_loud' | null;
}

interface Verdict {
  /** Absent in the daemon's answer to a registration that went through (it answers with the registration). */
  ok?: boolean;
  voiceprint_id?: string | null;
  quality?: Record<string, unknown>;
  levels?: string;
  error?: { code?: string; message: string; hint?: string };
}

const HINTS: Record<string, string> = { closer: 'Come closer to the microphone', louder: 'Speak a little louder', too_loud: 'Too loud: step back or speak softer' };
const FLOOR = -60;
const pct = (db: number | null) => `${db === null ? 0 : Math.max(0, Math.min(100, ((db - FLOOR) / -FLOOR) * 100)).toFixed(1)}%`;

function rows<T>(data: unknown, key: string): T[] {
  if (Array.isArray(data)) return data as T[];
  const v = (data as Record<string, unknown> | undefined)?.[key];
  return Array.isArray(v) ? (v as T[]) : [];
}

function Meter(props: { level: Level | undefined; seconds: number; recording: boolean }) {
  const l = props.level;
  const tone = !l ? 'idle' : l.hint === 'too_loud' ? 'bad' : l.hint ? 'warn' : 'ok';
  const done = l ? l.elapsed_ms / (l.elapsed_ms + l.remaining_ms) : 0;
  return (
    <div class="meter-box" data-testid="meter">
      <div class={`meter ${tone}`} role="meter" aria-label="Microphone level" aria-valuemin={FLOOR} aria-valuemax={0} aria-valuenow={l?.rms_dbfs ?? FLOOR} aria-busy={props.recording}>
        <div class="meter-fill" style={{ width: l ? pct(l.rms_dbfs) : '0%' }} />
        <div class="meter-peak" style={{ left: l ? pct(l.peak_dbfs) : '0%' }} />
        <div class="meter-zone" aria-hidden="true" />
      </div>
      <div class="meter-legend small">
        <span>{l ? `level ${dbfs(l.rms_dbfs)}, peak ${dbfs(l.peak_dbfs)}` : 'waiting for the microphone…'}</span>
        <span>{!props.recording ? 'loudest moment' : l ? `${(l.remaining_ms / 1000).toFixed(1)} s left` : `${props.seconds} s`}</span>
      </div>
      <div class="progress"><div style={{ width: `${(done * 100).toFixed(1)}%` }} /></div>
      {props.recording && <p class={`meter-hint ${tone}`} aria-live="polite">{l ? (l.hint ? HINTS[l.hint] : 'Good level: keep talking') : 'Start speaking when the meter moves'}</p>}
    </div>
  );
}

/** The quality figures in words: "2.0 s, speech in 80% (1.6 s), peak 0 dBFS, level -21 dBFS, clipped 0%". */
function qualityLine(q: Record<string, unknown>): string {
  const n = (k: string) => (typeof q[k] === 'number' ? (q[k] as number) : undefined);
  const parts: string[] = [];
  const sec = n('seconds');
  if (sec !== undefined) parts.push(`${sec.toFixed(1)} s recorded`);
  const vs = n('voiced_share');
  if (vs !== undefined) parts.push(`speech in ${Math.round(vs * 100)}%${n('voiced_seconds') !== undefined ? ` (${n('voiced_seconds')!.toFixed(1)} s)` : ''}`);
  if (n('peak_dbfs') !== undefined) parts.push(`peak ${dbfs(n('peak_dbfs'))}`);
  if (n('rms_dbfs') !== undefined) parts.push(`level ${dbfs(n('rms_dbfs'))}`);
  const cs = n('clipped_share');
  if (cs !== undefined) parts.push(`clipped ${(cs * 100).toFixed(cs > 0 && cs < 0.01 ? 2 : 0)}%`);
  return parts.join(' · ');
}

function Recorder(props: { onDone: () => void }) {
  const [name, setName] = useState('');
  const [seconds, setSeconds] = useState(8);
  const [recording, setRecording] = useState<string | undefined>(undefined);
  const [level, setLevel] = useState<Level | undefined>(undefined);
  const [loudest, setLoudest] = useState<Level | undefined>(undefined);
  const [verdict, setVerdict] = useState<Verdict | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);

  useEvents(['voiceprint.level'], (e) => {
    if (!recording || e.data.name !== recording) return;
    const l = e.data as unknown as Level;
    setLevel(l);
    setLoudest((m) => (!m || (l.rms_dbfs ?? -Infinity) > (m.rms_dbfs ?? -Infinity) ? l : m));
  });

  const start = async (e: Event) => {
    e.preventDefault();
    const n = name.trim();
    if (!n) return;
    setRecording(n);
    setLevel(undefined);
    setLoudest(undefined);
    setVerdict(undefined);
    setError(undefined);
    try {
      const v = await api.post<Verdict>('/api/voiceprint/enroll', { name: n, seconds });
      setVerdict({ ...v, ok: v.ok ?? !v.error });
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setRecording(undefined);
      props.onDone();
    }
  };

  const q = verdict?.quality;
  return (
    <Card title="Record a voiceprint" class="wide" id="recorder">
      <form class="record" onSubmit={(e) => void start(e)}>
        <div class="say-row">
          <label class="filter grow">Name<input value={name} maxLength={32} placeholder="Ada" onInput={(e) => setName(e.currentTarget.value)} disabled={!!recording} required aria-label="Voiceprint name" /></label>
          <label class="filter">Seconds<input type="number" min={1} max={60} value={seconds} onInput={(e) => setSeconds(Number(e.currentTarget.value) || 8)} disabled={!!recording} aria-label="Seconds to record" /></label>
          <button class="btn primary" type="submit" disabled={!name.trim() || !!recording}>{recording ? 'Recording…' : 'Record on the terminal'}</button>
        </div>
        <p class="muted small">The terminal's microphone records; the person speaks normally, about an arm's length away. The recording is checked for level, speech and clipping before it is sent.</p>
      </form>
      {/* The last reading stays beside the verdict: it tells why a recording was too quiet or too loud. */}
      {(recording || loudest) && <Meter level={recording ? level : loudest} seconds={seconds} recording={!!recording} />}
      {verdict && (
        <div class={`alert stack ${verdict.ok ? 'ok' : 'bad'}`} role="status" data-testid="verdict">
          <strong>{verdict.ok ? `Registered ${verdict.voiceprint_id ? `as ${verdict.voiceprint_id}` : ''}` : verdict.error?.message ?? 'Refused'}</strong>
          {verdict.error?.hint && <p class="hint">{verdict.error.hint}</p>}
          {verdict.levels && <p class="small">{verdict.levels}</p>}
          {q && <p class="small muted">{qualityLine(q)}</p>}
        </div>
      )}
      <ErrorBox error={error} what="Not registered" />
    </Card>
  );
}

/** The service's status (1 trained, 0 training, -1 does not exist) in words; the daemon's status_text when it has one. */
function speakerState(s: SpeakerRow): { tone: Tone; label: string } {
  if (s.status === 1 || s.status_text === 'ready') return { tone: 'ok', label: 'trained' };
  if (s.status === 0 || s.status_text === 'training') return { tone: 'info', label: 'training' };
  if (s.status === -1 || s.status_text === 'failed') return { tone: 'bad', label: 'failed: not in the service' };
  return { tone: 'idle', label: s.status_text ?? `status ${s.status}` };
}

export function Voice() {
  const vps = useResource<unknown>('/api/voiceprints', { refreshOn: ['voiceprint.registered', 'enroll.done'] });
  const spk = useResource<unknown>('/api/speakers', { refreshOn: ['enroll.done', 'enroll.failed'], intervalMs: 20_000 });
  const voiceprints = rows<VoiceprintRow>(vps.data, 'voiceprints');
  const speakers = rows<SpeakerRow>(spk.data, 'speakers');
  return (
    <div data-ready={vps.data && spk.data ? 'voice' : undefined}>
      <PageHead title="Voiceprints & speakers" sub="What this terminal registered. The service has no list of its own, so this is the record." />
      <div class="grid">
        <Recorder onDone={vps.reload} />
        <Card title={<>Voiceprints <Badge tone="idle">{voiceprints.length}</Badge></>} class="wide" id="voiceprints">
          {!vps.data ? (vps.error ? <ErrorBox error={vps.error} onRetry={vps.reload} /> : <Loading what="voiceprints" />)
            : voiceprints.length === 0 ? (
              <Empty title="No voiceprints yet" icon="◉">Record one above, or drop <code>NAME.wav</code> on the <a href="#/enrollment">Enrollment</a> page.</Empty>
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="voiceprints">
                  <thead><tr><th>Name</th><th>Id</th><th class="hide-s">From</th><th class="hide-s num">Seconds</th><th>Registered</th></tr></thead>
                  <tbody>
                    {voiceprints.map((v, i) => (
                      <tr key={v.voiceprint_id ?? i}>
                        <td><strong>{v.name}</strong></td>
                        <td><code class="small">{v.voiceprint_id ?? '—'}</code></td>
                        <td class="hide-s">{v.source}</td>
                        <td class="hide-s num">{v.seconds !== null && v.seconds !== undefined ? v.seconds.toFixed(1) : ''}</td>
                        <td title={localTime(v.created_at)}><Ago at={v.created_at} /></td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </Card>
        <Card title={<>Trained speakers <Badge tone="idle">{speakers.length}</Badge></>} class="wide" id="speakers">
          {!spk.data ? (spk.error ? <ErrorBox error={spk.error} onRetry={spk.reload} /> : <Loading what="speakers" />)
            : speakers.length === 0 ? (
              <Empty title="No trained speakers yet" icon="♫">Drop <code>LABEL.wav</code> together with <code>LABEL.txt</code> (what is said in it) on the <a href="#/enrollment">Enrollment</a> page to train a voice.</Empty>
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="speakers">
                  <thead><tr><th>Label</th><th>Speaker id</th><th class="hide-s">Model</th><th>Training</th><th class="hide-s">Updated</th></tr></thead>
                  <tbody>
                    {speakers.map((s) => {
                      const st = speakerState(s);
                      return (
                        <tr key={`${s.model}/${s.speaker_id}`}>
                          <td><strong>{s.label ?? '—'}</strong></td>
                          <td><code class="small">{s.speaker_id}</code></td>
                          <td class="hide-s">{s.model}</td>
                          <td><Badge tone={st.tone}>{st.label}</Badge></td>
                          <td class="hide-s"><Ago at={s.updated_at} /></td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
        </Card>
      </div>
    </div>
  );
}
