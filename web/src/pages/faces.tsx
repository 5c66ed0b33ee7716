import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { useEvents } from '../events';
import { useResource } from '../resource';
import type { Face, FacesList } from '../types';
import { Ago, Badge, Empty, ErrorBox, Loading, PageHead } from '../ui';

// The terminal's face cache as a gallery. Everything here comes from the local cache, so it works
// while the cloud is unreachable; tiles show small thumbnails the daemon made once, loaded lazily as
// they scroll into view, and the full cached image opens only on demand.

const STALE_MS = 60 * 60_000;

interface SyncProgress {
  phase: 'listing' | 'downloading' | 'committing';
  faces: number | null;
  images_done: number;
  images_total: number;
}

function Progress(props: { p: SyncProgress }) {
  const { p } = props;
  const share = p.phase === 'downloading' && p.images_total > 0 ? p.images_done / p.images_total : p.phase === 'committing' ? 1 : 0;
  const text = p.phase === 'listing' ? 'Syncing: asking the service for the group’s faces…'
    : p.phase === 'downloading' ? `Syncing: ${p.images_done} of ${p.images_total} new pictures downloaded`
      : 'Syncing: saving the cache…';
  return (
    <div class="sync-progress" role="status" data-testid="sync-progress">
      <p class="small">{text}</p>
      <div class="progress"><div style={{ width: `${(share * 100).toFixed(1)}%` }} /></div>
    </div>
  );
}

function normalize(s: string): string {
  return s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

function Lightbox(props: { face: Face | undefined; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.face && !d.open) d.showModal();
    if (!props.face && d.open) d.close();
  }, [props.face]);
  const f = props.face;
  return (
    <dialog ref={ref} class="lightbox" onClose={props.onClose} onClick={(e) => e.target === ref.current && props.onClose()}>
      {f && (
        <figure>
          <img src={f.image_url} alt={`Cached picture of ${f.name}`} />
          <figcaption>
            <strong>{f.name}</strong>
            <code class="small">{f.face_id}</code>
            <button class="btn small" onClick={props.onClose} autofocus>Close</button>
          </figcaption>
        </figure>
      )}
    </dialog>
  );
}

export function Faces() {
  const { data, error, reload } = useResource<FacesList>('/api/faces', { refreshOn: ['faces.synced', 'faces.sync.failed'], intervalMs: 60_000 });
  const [progress, setProgress] = useState<SyncProgress | undefined>(undefined);
  useEvents(['faces.sync.progress', 'faces.synced', 'faces.sync.failed'], (e) => setProgress(e.type === 'faces.sync.progress' ? (e.data as unknown as SyncProgress) : undefined));
  const [q, setQ] = useState('');
  const [open, setOpen] = useState<Face | undefined>(undefined);
  const [syncing, setSyncing] = useState(false);
  const [syncError, setSyncError] = useState<ApiError | undefined>(undefined);
  const syncNow = async () => {
    setSyncing(true);
    setSyncError(undefined);
    try {
      await api.post('/api/faces/sync');
    } catch (e) {
      setSyncError(e as ApiError);
    } finally {
      setSyncing(false);
      reload();
    }
  };
  const shown = useMemo(() => {
    const faces = data?.faces ?? [];
    const n = normalize(q.trim());
    const list = n ? faces.filter((f) => normalize(f.name).includes(n) || f.face_id.toLowerCase().includes(n)) : faces;
    return [...list].sort((a, b) => a.name.localeCompare(b.name));
  }, [data, q]);

  if (!data) return <>{error ? <ErrorBox error={error} what="Cannot read the face cache" onRetry={reload} /> : <Loading what="the face cache" />}</>;
  const syncedAt = data.synced_at;
  const stale = syncedAt ? Date.now() - Date.parse(syncedAt) > STALE_MS : true;
  return (
    <div data-ready="faces">
      <PageHead
        title="Faces"
        sub={<span data-testid="freshness">{data.total} {data.total === 1 ? 'face' : 'faces'} in the local cache · synced <Ago at={syncedAt} />{data.index_version !== undefined && data.index_version !== null ? <> · index v{data.index_version}</> : null}{' '}<Badge tone={syncedAt ? (stale ? 'warn' : 'ok') : 'idle'}>{syncedAt ? (stale ? 'stale' : 'fresh') : 'never synced'}</Badge></span>}
        actions={<>
          <input class="search" type="search" placeholder="Search by name or id" aria-label="Search faces" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
          <button class="btn" onClick={() => void syncNow()} disabled={syncing || data.sync_state === 'syncing'}>{syncing || data.sync_state === 'syncing' ? 'Syncing…' : 'Sync now'}</button>
        </>}
      />
      {progress && <Progress p={progress} />}
      <ErrorBox error={error} what="Showing the faces read before; refreshing failed" />
      <ErrorBox error={syncError} what="The sync failed; the gallery shows the cache as it was" />
      {data.last_sync && !data.last_sync.ok && !syncError && (
        <div class="alert bad" role="status">
          <div>
            <strong>The last sync failed <Ago at={data.last_sync.finished_at ?? data.last_sync.started_at} />: {data.last_sync.error ?? data.last_sync.error_code}</strong>
            <p class="hint">This gallery is the local cache, as of the last good sync; the terminal keeps recognising these faces. <a href="#/overview">Overview</a> says what to fix.</p>
          </div>
        </div>
      )}
      {data.total === 0 ? (
        <Empty title="The face cache is empty" icon="☺">
          <p>Faces appear here after the terminal syncs its group. Add one by dropping a picture named after the person on the <a href="#/enrollment">Enrollment</a> page.</p>
          <p class="muted">If the group has faces but none arrive, the <a href="#/overview">Overview</a> says why the sync fails.</p>
        </Empty>
      ) : shown.length === 0 ? (
        <Empty title={`No face matches “${q}”`} icon="⌕"><button class="btn small" onClick={() => setQ('')}>Clear the search</button></Empty>
      ) : (
        <ul class="gallery" data-testid="gallery">
          {shown.map((f) => (
            <li key={f.face_id}>
              <button class="tile" onClick={() => setOpen(f)} title={`${f.name} (${f.face_id})`}>
                <img src={f.thumb_url} alt="" loading="lazy" decoding="async" width="160" height="160" />
                <span class="tile-name">{f.name}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {q && shown.length > 0 && <p class="muted small">{shown.length} of {data.total} shown</p>}
      <Lightbox face={open} onClose={() => setOpen(undefined)} />
    </div>
  );
}
