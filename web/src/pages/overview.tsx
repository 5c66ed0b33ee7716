import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { useResource } from '../resource';
import { duration, plural } from '../format';
import type { Failure, Status, StatusAction } from '../types';
import { Ago, Badge, Card, Dot, Empty, ErrorBox, KV, Loading, PageHead, type Tone } from '../ui';

// What `terminal-agent status` says, kept current by the event stream: problems and their fixes
// first, then the face cache, the outbox, audio, components and the latest failures.

const LIVE_EVENTS = ['faces.synced', 'faces.sync.failed', 'enroll.queued', 'enroll.started', 'enroll.done', 'enroll.failed', 'speech.started', 'speech.finished',
  'voiceprint.registered', 'voiceprint.failed', 'component.degraded', 'component.recovered'] as const;

const COMPONENT_NAMES: Record<string, string> = { faces: 'Face sync', speech: 'Speech output', voice: 'Voice input', enroll: 'Enrollment', console: 'Web console' };

const PAGE_OF: Record<string, [string, string]> = { faces: ['faces', 'Faces'], enroll: ['enrollment', 'Enrollment'], speech: ['speech', 'Speech'], voice: ['voice', 'Voiceprints'] };

const capitalize = (t: string) => t.charAt(0).toUpperCase() + t.slice(1);

const OUTBOX_STATES = ['queued', 'sending', 'unknown', 'training', 'done', 'failed'] as const;

/** A component's status in a word and a colour. */
export function componentState(v: unknown): { tone: Tone; label: string; detail?: string } {
  if (v === null || v === undefined) return { tone: 'idle', label: 'not running' };
  if (v === 'missing') return { tone: 'idle', label: 'not in this build' };
  if (typeof v !== 'object') return { tone: 'ok', label: String(v) };
  const o = v as Record<string, unknown>;
  if (typeof o.degraded === 'string') return { tone: 'bad', label: 'unavailable', detail: o.degraded };
  if (typeof o.error === 'string') return { tone: 'bad', label: 'error', detail: o.error };
  const state = typeof o.state === 'string' ? o.state : 'running';
  const tone: Tone = ['auth_failed', 'failed', 'stopped'].includes(state) ? 'bad' : ['backoff', 'held'].includes(state) ? 'warn' : ['syncing', 'playing', 'recording', 'sending'].includes(state) ? 'info' : 'ok';
  const last = o.last_error as { message?: string } | string | null | undefined;
  const detail = tone === 'ok' || tone === 'info' ? undefined : typeof last === 'string' ? last : last?.message;
  return { tone, label: state.replace(/_/g, ' '), detail };
}

/** Problems the page can name itself when the server sent no `actions` (an older daemon). */
function derivedActions(s: Status): StatusAction[] {
  const out: StatusAction[] = [];
  const last = s.faces.last_sync;
  if (last && !last.ok) out.push({ component: 'faces', problem: `The last face sync failed: ${last.error ?? last.error_code ?? 'unknown error'}`, fix: 'Run terminal-agent doctor on the terminal to see which check fails.' });
  for (const [name, v] of Object.entries(s.components)) {
    const c = componentState(v);
    if (c.tone === 'bad') out.push({ component: name, problem: `${name}: ${c.detail ?? c.label}`, fix: 'Run terminal-agent doctor on the terminal.' });
  }
  for (const w of s.watchdog.failing) out.push({ component: 'watchdog', problem: `Stuck: ${w}`, fix: 'Restart the agent: systemctl restart terminal-agent' });
  if (s.reload.last_error) out.push({ component: 'config', problem: `The last reload was refused: ${s.reload.last_error}`, fix: 'Fix the config (terminal-agent config check), then systemctl reload terminal-agent.' });
  return out;
}

/** Runs a fix the daemon offered (only POSTs to its own /api/). */
function ActionButton(props: { action: NonNullable<StatusAction['action']>; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const a = props.action;
  if (a.method !== 'POST' || !a.path.startsWith('/api/')) return null;
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await api.post(a.path);
    } catch (e) {
      setError(e as ApiError);
    } finally {
      setBusy(false);
      props.onDone();
    }
  };
  return (
    <>
      <button class="btn small primary" disabled={busy} onClick={() => void run()}>{busy ? `${a.label}…` : a.label}</button>
      {error && <p class="small bad-text action-error">{error.message}</p>}
    </>
  );
}

function Attention(props: { actions: StatusAction[]; onChange: () => void }) {
  if (props.actions.length === 0) {
    return (
      <div class="banner ok" data-testid="health">
        <Dot tone="ok" />
        <div><strong>Everything is working.</strong> <span class="muted">No component reports a problem.</span></div>
      </div>
    );
  }
  return (
    <div class="banner bad" data-testid="health">
      <div class="banner-body">
        <strong>{props.actions.length === 1 ? 'One thing needs attention' : `${props.actions.length} things need attention`}</strong>
        <ul class="actions">
          {props.actions.map((a, i) => {
            const page = PAGE_OF[a.component];
            return (
              <li key={i}>
                <Badge tone="bad">{COMPONENT_NAMES[a.component] ?? a.component}</Badge>
                <div>
                  <p>{capitalize(a.problem)}</p>
                  {a.fix && <p class="fix"><span class="fix-label">Fix:</span> {a.fix}</p>}
                </div>
                <div class="action-buttons">
                  {a.action && <ActionButton action={a.action} onDone={props.onChange} />}
                  {page && <a class="btn small" href={`#/${page[0]}`}>{page[1]}</a>}
                </div>
              </li>
            );
          })}
        </ul>
      </div>
    </div>
  );
}

function changes(r: { added: number; updated: number; removed: number; failed: number }): string {
  const parts = [r.added && `${r.added} new`, r.updated && `${r.updated} updated`, r.removed && `${r.removed} removed`, r.failed && `${r.failed} image(s) failed`].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}

function FacesCard(props: { s: Status }) {
  const f = props.s.faces;
  const last = f.last_sync;
  const tone: Tone = !last ? 'idle' : last.ok ? 'ok' : 'bad';
  return (
    <Card title="Face cache" tone={tone} actions={<a class="btn small ghost" href="#/faces">Open gallery</a>}>
      <p class="big" data-testid="faces-cached">{f.cached ?? 0}<span class="unit"> {f.cached === 1 ? 'face' : 'faces'} cached</span></p>
      <KV rows={[
        ['Last sync', last ? <span><Badge tone={tone}>{last.ok ? 'ok' : 'failed'}</Badge> <Ago at={last.finished_at ?? last.started_at} /></span> : <span class="muted">no sync yet</span>],
        ['Last good sync', <Ago at={f.last_ok_sync_at} />],
        ...(last?.ok ? [['Changes', changes(last)] as [string, string]] : []),
      ]} />
      {last && !last.ok && <p class="alert bad small">{last.error}{last.error_code ? <span class="code"> {last.error_code}</span> : null}</p>}
    </Card>
  );
}

function OutboxCard(props: { s: Status }) {
  const kinds = Object.entries(props.s.outbox).sort(([a], [b]) => a.localeCompare(b));
  const used = OUTBOX_STATES.filter((st) => kinds.some(([, v]) => (v[st] ?? 0) > 0));
  const cols = used.length ? used : (['queued', 'done', 'failed'] as const);
  const failed = kinds.reduce((n, [, v]) => n + (v.failed ?? 0), 0);
  return (
    <Card title="Outbox" tone={failed ? 'warn' : 'ok'} actions={<a class="btn small ghost" href="#/enrollment">Enrollment</a>}>
      {kinds.length === 0 ? (
        <Empty title="Nothing uploaded yet" icon="⇪">Drop a picture on the <a href="#/enrollment">Enrollment</a> page, or into the <code>faces/</code> enrollment folder.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="table compact" data-testid="outbox">
            <thead><tr><th>Kind</th>{cols.map((c) => <th key={c} class="num">{c}</th>)}</tr></thead>
            <tbody>
              {kinds.map(([kind, states]) => (
                <tr key={kind}>
                  <th scope="row">{kind}</th>
                  {cols.map((c) => {
                    const n = states[c] ?? 0;
                    return <td key={c} class={`num ${n && c === 'failed' ? 'bad-text' : ''} ${n ? '' : 'muted'}`}>{n}</td>;
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}

function AudioCard(props: { s: Status }) {
  const out = componentState(props.s.audio.speech);
  const inp = componentState(props.s.audio.voice);
  const row = (label: string, device: string, c: ReturnType<typeof componentState>, href: string): [ComponentChildren, ComponentChildren] => [
    label,
    <span><code>{device}</code> <Badge tone={c.tone}>{c.label}</Badge> <a href={href} class="small nowrap">{label === 'Speaker' ? 'Say something' : 'Record'}</a>{c.detail && <span class="detail block">{c.detail}</span>}</span>,
  ];
  return (
    <Card title="Audio devices" tone={out.tone === 'bad' || inp.tone === 'bad' ? 'bad' : 'ok'}>
      <KV rows={[row('Speaker', props.s.audio.output_device, out, '#/speech'), row('Microphone', props.s.audio.input_device, inp, '#/voice')]} />
    </Card>
  );
}

function ComponentsCard(props: { s: Status }) {
  const entries = Object.entries(props.s.components);
  return (
    <Card title="Components">
      <ul class="components">
        {entries.map(([name, v]) => {
          const c = componentState(v);
          return (
            <li key={name} data-component={name}>
              <Dot tone={c.tone} />
              <span class="name">{COMPONENT_NAMES[name] ?? name}</span>
              <Badge tone={c.tone}>{c.label}</Badge>
              {c.detail && <p class="detail">{c.detail}</p>}
            </li>
          );
        })}
      </ul>
    </Card>
  );
}

function failureFix(f: Failure): ComponentChildren {
  if (f.source === 'outbox') return <a href="#/enrollment" class="small">Fix the file, then retry it on the Enrollment page</a>;
  if (f.source === 'faces') return <span class="small muted">The next sync tries again; <code>terminal-agent doctor</code> shows why.</span>;
  return null;
}

function FailuresCard(props: { s: Status }) {
  const list = props.s.recent_failures;
  return (
    <Card title="Recent failures" tone={list.length ? 'warn' : undefined} class="span2">
      {list.length === 0 ? (
        <Empty title="No recent failures" icon="✓">Failed uploads and syncs show up here with their reason.</Empty>
      ) : (
        <ul class="failures" data-testid="failures">
          {list.map((f, i) => (
            <li key={i}>
              <div class="failure-head">
                <Badge tone="bad">{f.source}{f.kind ? `/${f.kind}` : ''}</Badge>
                {f.name && <strong class="mono">{f.name}</strong>}
                <span class="muted small"><Ago at={f.at} /></span>
              </div>
              <p>{f.error}{f.code ? <span class="code"> {f.code}</span> : null}</p>
              {failureFix(f)}
            </li>
          ))}
        </ul>
      )}
    </Card>
  );
}

function AgentCard(props: { s: Status }) {
  const s = props.s;
  return (
    <Card title="Agent" class="wide">
      <KV cols rows={[
        ['Version', s.version],
        ['State', <Badge tone={s.state === 'running' ? 'ok' : 'warn'}>{s.state}</Badge>],
        ['Up for', duration(s.uptime_s)],
        ['Config', <code>{s.config_file ?? '—'}</code>],
        ['State dir', <code>{s.state_dir}</code>],
        ['Watchdog', s.watchdog.enabled ? <span>fed <Ago at={s.watchdog.last_fed_at} /></span> : <span class="muted">off (not under systemd)</span>],
        ['Reloads', s.reload.count ? <span>{plural(s.reload.count, 'reload')}, last <Ago at={s.reload.last_at} /></span> : 'none'],
      ]} />
    </Card>
  );
}

export function Overview() {
  const { data: s, error, reload } = useResource<Status>('/api/status', { refreshOn: LIVE_EVENTS, intervalMs: 15_000 });
  // The first page is interactive once the status is on screen: test/bench/console-page.mjs reads this mark.
  useEffect(() => {
    if (s && performance.getEntriesByName('console-interactive').length === 0) performance.mark('console-interactive');
  }, [s]);
  if (!s) return <>{error ? <ErrorBox error={error} what="Cannot read the status" onRetry={reload} /> : <Loading what="the status" />}</>;
  const actions = s.actions ?? derivedActions(s);
  return (
    <div data-ready="overview">
      <PageHead title="Overview" sub={<>terminal-agent {s.version} · {s.state} · up {duration(s.uptime_s)}</>} />
      <ErrorBox error={error} what="Showing the last status read; refreshing failed" />
      <Attention actions={actions} onChange={reload} />
      <div class="grid">
        <FacesCard s={s} />
        <OutboxCard s={s} />
        <AudioCard s={s} />
        <FailuresCard s={s} />
        <ComponentsCard s={s} />
        <AgentCard s={s} />
      </div>
    </div>
  );
}
