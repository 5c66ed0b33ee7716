import { useRef, useState } from 'preact/hooks';
import { ApiError, api, query } from '../api';
import { useResource } from '../resource';
import { bytes } from '../format';
import type { EnrollItem, EnrollList, EnrollState } from '../types';
import { Ago, Badge, Card, Empty, ErrorBox, Loading, PageHead, type Tone } from '../ui';
import { ACCEPT, KINDS, planUploads, type Kind } from './upload';

// The enrollment folders as an operator sees them: what failed and why (with a retry once fixed),
// what waits, what is being sent and what is done. Files dropped here are written into the same
// folders by the daemon (under a hidden name, then renamed), so the one exactly-once pipeline takes
// them as if they had been copied onto the terminal.

const EVENTS = ['enroll.queued', 'enroll.started', 'enroll.done', 'enroll.failed', 'faces.synced'] as const;

const SECTIONS: { state: EnrollState; title: string; tone: Tone; empty: string }[] = [
  { state: 'failed', title: 'Failed', tone: 'bad', empty: 'No failed files.' },
  { state: 'in_flight', title: 'Being sent', tone: 'info', empty: 'Nothing is being sent right now.' },
  { state: 'queued', title: 'Waiting', tone: 'warn', empty: 'Nothing waits to be sent.' },
  { state: 'done', title: 'Done', tone: 'ok', empty: 'Nothing enrolled yet.' },
];

interface UploadRow {
  id: number;
  name: string;
  kind: Kind | undefined;
  state: 'sending' | 'sent' | 'refused';
  message?: string;
  hint?: string;
}

function whereIs(list: EnrollList, kind: string | undefined, name: string): EnrollState | undefined {
  return (['failed', 'done', 'in_flight', 'queued'] as const).find((st) => (list[st] ?? []).some((i) => i.kind === kind && i.name === name));
}

function Preview(props: { item: EnrollItem; playing: string | undefined; onPlay: (url: string | undefined) => void }) {
  const { item } = props;
  const [broken, setBroken] = useState(false);
  const url = item.preview_url ?? (item.media === 'image' || item.media === 'audio' ? `/api/enroll/file${query({ kind: item.kind, state: item.state, name: item.name })}` : undefined);
  // A file that failed for not being a picture has nothing to show.
  if (url && item.media === 'image' && !broken) return <img class="thumb" src={url} alt="" loading="lazy" decoding="async" width="56" height="56" onError={() => setBroken(true)} />;
  if (broken) return <span class="thumb text" title="Not a picture a browser can show">?</span>;
  if (url && item.media === 'audio') {
    const on = props.playing === url;
    return <button class={`thumb play ${on ? 'on' : ''}`} onClick={() => props.onPlay(on ? undefined : url)} aria-label={on ? `Stop ${item.name}` : `Play ${item.name}`} title={on ? 'Stop' : 'Play'}>{on ? '■' : '▶'}</button>;
  }
  return <span class="thumb text" aria-hidden="true">{item.media === 'text' ? '¶' : '•'}</span>;
}

/** The face check's record in a face's result file (src/enroll/face-check-step.ts), when there is one. */
interface FaceCheckView {
  verdict: string;
  message?: string;
  width?: number;
  height?: number;
  faces?: Array<{ x: number; y: number; width: number; height: number; score: number }>;
  sharpness?: number;
  brightness?: number;
}

function faceCheckOf(item: EnrollItem): FaceCheckView | undefined {
  const fc = item.result?.face_check;
  return fc && typeof fc === 'object' && typeof (fc as FaceCheckView).verdict === 'string' ? (fc as FaceCheckView) : undefined;
}

/** The found faces drawn over the thumbnail, which shows the image as `object-fit: cover` does (slice). */
function FaceBoxes(props: { fc: FaceCheckView }) {
  const { fc } = props;
  if (!fc.width || !fc.height || !fc.faces?.length) return null;
  return (
    <svg class={`face-boxes ${fc.verdict}`} data-testid="face-boxes" viewBox={`0 0 ${fc.width} ${fc.height}`} preserveAspectRatio="xMidYMid slice" aria-hidden="true">
      {fc.faces.map((f, i) => <rect key={i} x={f.x} y={f.y} width={f.width} height={f.height} vector-effect="non-scaling-stroke" />)}
    </svg>
  );
}

/** "face check accepted · 1 face, 196 px · sharpness 2065 · brightness 137". */
function faceCheckLine(fc: FaceCheckView): string {
  const n = fc.faces?.length ?? 0;
  const sizes = (fc.faces ?? []).map((f) => `${Math.round(f.width)} px`).join(', ');
  return [
    `face check ${fc.verdict}`,
    fc.faces ? `${n} face${n === 1 ? '' : 's'}${sizes ? `, ${sizes}` : ''}` : '',
    fc.sharpness !== undefined ? `sharpness ${Math.round(fc.sharpness)}` : '',
    fc.brightness !== undefined ? `brightness ${Math.round(fc.brightness)}` : '',
  ].filter(Boolean).join(' · ');
}

function resultLine(item: EnrollItem): string | undefined {
  const r = item.result;
  if (!r) return undefined;
  for (const k of ['face_id', 'voiceprint_id', 'speaker_id', 'id']) if (typeof r[k] === 'string' || typeof r[k] === 'number') return `${k} ${String(r[k])}`;
  return undefined;
}

function ItemRow(props: { item: EnrollItem; playing: string | undefined; onPlay: (url: string | undefined) => void; onRetry?: (item: EnrollItem) => void; retrying: boolean }) {
  const { item } = props;
  const result = resultLine(item);
  const fc = faceCheckOf(item);
  return (
    <li class={`item ${item.state}`} data-name={item.name} data-kind={item.kind} data-state={item.state}>
      <span class="thumb-wrap">
        <Preview item={item} playing={props.playing} onPlay={props.onPlay} />
        {fc && <FaceBoxes fc={fc} />}
      </span>
      <div class="item-main">
        <div class="item-head">
          <strong class="mono item-name">{item.name}</strong>
          <Badge tone="idle">{item.kind}</Badge>
          {props.onRetry && <button class="btn small retry" disabled={props.retrying} onClick={() => props.onRetry!(item)}>{props.retrying ? 'Retrying…' : 'Retry'}</button>}
        </div>
        <p class="muted small">{[item.size !== undefined ? bytes(item.size) : '', item.step, item.attempts && item.attempts > 1 ? `attempt ${item.attempts}` : '', result].filter(Boolean).join(' · ')}{item.at ? <> · <Ago at={item.at} /></> : null}</p>
        {fc && (
          <p class={`small face-check ${fc.verdict}`} data-testid="face-check">
            {faceCheckLine(fc)}
            {fc.verdict === 'warned' && fc.message ? <span class="hint"> ({fc.message})</span> : null}
          </p>
        )}
        {item.error && (
          <div class="reason" data-testid="reason">
            <p>{item.error.message}{item.error.code ? <span class="code"> {item.error.code}</span> : null}</p>
            {item.error.hint && <p class="hint">{item.error.hint}</p>}
            {item.kind === 'knowledge' && <p class="hint">Knowledge files are a mirror: fix the file in <code>knowledge/</code> and save it again; it is sent again by itself.</p>}
          </div>
        )}
      </div>
    </li>
  );
}

function DropZone(props: { onFiles: (files: File[], kind: Kind | undefined) => void }) {
  const [kind, setKind] = useState<Kind | 'auto'>('auto');
  const [over, setOver] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const forced = kind === 'auto' ? undefined : kind;
  const take = (list: FileList | null | undefined) => {
    const files = list ? Array.from(list) : [];
    if (files.length) props.onFiles(files, forced);
  };
  return (
    <div
      class={`dropzone ${over ? 'over' : ''}`}
      data-testid="dropzone"
      onDragEnter={(e) => { e.preventDefault(); setOver(true); }}
      onDragOver={(e) => { e.preventDefault(); if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy'; }}
      onDragLeave={(e) => { if (e.currentTarget === e.target) setOver(false); }}
      onDrop={(e) => { e.preventDefault(); setOver(false); take(e.dataTransfer?.files); }}
    >
      <div class="dz-icon" aria-hidden="true">⇪</div>
      <p class="dz-title"><span class="pointer-only">Drop pictures, recordings or texts here</span><span class="touch-only">Add pictures, recordings or texts</span></p>
      <p class="muted small">Pictures go to <code>faces/</code> (named after the person), <code>.wav</code> to <code>voiceprints/</code>, a <code>.wav</code> with a <code>.txt</code> of the same name to <code>speakers/</code>, <code>.txt</code>/<code>.md</code> to <code>knowledge/</code>.</p>
      <div class="dz-controls">
        <label class="small">Folder{' '}
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind | 'auto')} aria-label="Enrollment folder">
            <option value="auto">by file type</option>
            {KINDS.map((k) => <option key={k} value={k}>{k}/</option>)}
          </select>
        </label>
        <button class="btn primary small" onClick={() => input.current?.click()}>Choose files…</button>
        <input ref={input} type="file" multiple hidden accept={forced ? ACCEPT[forced] : Object.values(ACCEPT).join(',')} onChange={(e) => { take(e.currentTarget.files); e.currentTarget.value = ''; }} />
      </div>
    </div>
  );
}

export function Enrollment() {
  const { data, error, reload } = useResource<EnrollList>('/api/enroll', { refreshOn: EVENTS, intervalMs: 10_000 });
  const [uploads, setUploads] = useState<UploadRow[]>([]);
  const [playing, setPlaying] = useState<string | undefined>(undefined);
  const [retrying, setRetrying] = useState<Set<string>>(new Set());
  const [actionError, setActionError] = useState<ApiError | undefined>(undefined);
  const audio = useRef<HTMLAudioElement | null>(null);
  const nextId = useRef(1);

  const play = (url: string | undefined) => {
    audio.current?.pause();
    setPlaying(url);
    if (!url) return;
    const a = new Audio(url);
    audio.current = a;
    a.onended = () => setPlaying(undefined);
    a.onerror = () => setPlaying(undefined);
    void a.play().catch(() => setPlaying(undefined));
  };

  const patch = (id: number, p: Partial<UploadRow>) => setUploads((rows) => rows.map((r) => (r.id === id ? { ...r, ...p } : r)));

  const onFiles = async (files: File[], forced: Kind | undefined) => {
    const plan = planUploads(files, forced);
    const rows = plan.map((p): UploadRow => ({ id: nextId.current++, name: p.file.name, kind: p.kind, state: p.kind ? 'sending' : 'refused', message: p.problem }));
    setUploads((old) => [...rows, ...old].slice(0, 30));
    for (const [i, p] of plan.entries()) {
      const row = rows[i]!;
      if (!p.kind) continue;
      try {
        await api.upload(`/api/enroll/upload${query({ kind: p.kind, name: p.file.name })}`, p.file);
        patch(row.id, { state: 'sent' });
      } catch (e) {
        const err = e as ApiError;
        patch(row.id, { state: 'refused', message: err.message, hint: err.hint });
      }
    }
    reload();
  };

  const retry = async (item: EnrollItem) => {
    const key = `${item.kind}/${item.name}`;
    setRetrying((s) => new Set(s).add(key));
    setActionError(undefined);
    try {
      await api.post('/api/enroll/retry', { kind: item.kind, name: item.name });
    } catch (e) {
      setActionError(e as ApiError);
    } finally {
      setRetrying((s) => {
        const n = new Set(s);
        n.delete(key);
        return n;
      });
      reload();
    }
  };

  const total = data ? SECTIONS.reduce((n, s) => n + (data[s.state]?.length ?? 0), 0) : 0;
  return (
    <div data-ready={data ? 'enrollment' : undefined}>
      <PageHead title="Enrollment" sub="Files dropped into the enrollment folders, on the terminal or here, each sent exactly once." />
      <DropZone onFiles={(f, k) => void onFiles(f, k)} />
      {uploads.length > 0 && (
        <ul class="uploads" data-testid="uploads" aria-live="polite">
          {uploads.map((u) => {
            // Once uploaded, the file's state is the pipeline's: follow it in the listing.
            const now = u.state === 'sent' && data ? whereIs(data, u.kind, u.name) : undefined;
            const [tone, label, message] = now === 'done' ? ['ok', 'enrolled', `in done/${u.kind}/`] as const
              : now === 'failed' ? ['bad', 'failed', 'see Failed below'] as const
                : now === 'in_flight' ? ['info', 'sending', `to the service from ${u.kind}/`] as const
                  : u.state === 'sent' ? ['info', 'uploaded', `in ${u.kind}/, waiting for the pipeline`] as const
                    : u.state === 'refused' ? ['bad', 'refused', u.message] as const : ['info', 'uploading', u.message] as const;
            return (
              <li key={u.id} class={u.state} data-name={u.name} data-state={now ?? u.state}>
                <Badge tone={tone}>{label}</Badge>
                <span class="mono">{u.name}</span>
                {message && <span class="small muted">{message}</span>}
                {u.hint && <span class="small hint">{u.hint}</span>}
              </li>
            );
          })}
        </ul>
      )}
      <ErrorBox error={actionError} what="Retry refused" />
      {!data ? (
        error ? <ErrorBox error={error} what="Cannot read the enrollment folders" onRetry={reload} /> : <Loading what="the enrollment folders" />
      ) : (
        <>
          <ErrorBox error={error} what="Showing the last list read; refreshing failed" />
          {total === 0 && <Empty title="No enrollment files yet" icon="⇪">Drop a picture named after the person (for example <code>Ada Lovelace.jpg</code>) above, or copy it into the <code>faces/</code> folder on the terminal.</Empty>}
          <div class="lanes">
            {SECTIONS.map((s) => {
              const items = data[s.state] ?? [];
              if (total === 0) return null;
              return (
                <Card key={s.state} id={`lane-${s.state}`} class={`lane lane-${s.state}`} title={<><span>{s.title}</span> <Badge tone={items.length ? s.tone : 'idle'}>{items.length}</Badge></>}>
                  {items.length === 0 ? <p class="muted small lane-empty">{s.empty}</p> : (
                    <ul class="items">
                      {items.map((it) => (
                        <ItemRow key={`${it.kind}/${it.name}`} item={it} playing={playing} onPlay={play} onRetry={s.state === 'failed' && it.kind !== 'knowledge' ? retry : undefined} retrying={retrying.has(`${it.kind}/${it.name}`)} />
                      ))}
                    </ul>
                  )}
                  {(data.more?.[s.state] ?? 0) > 0 && <p class="muted small">and {data.more![s.state]} more, older</p>}
                  {s.state === 'failed' && items.length > 0 && <p class="muted small">Fix the file (or the cause named above), then press Retry: it goes back into its folder and through the pipeline again.</p>}
                </Card>
              );
            })}
          </div>
        </>
      )}
    </div>
  );
}
