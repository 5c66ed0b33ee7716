import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from './api';
import { ago, localTime } from './format';

// The few building blocks every page is made of, so that a state looks the same everywhere:
// green is fine, amber needs a look, red needs an action, grey is idle or unknown.

export type Tone = 'ok' | 'warn' | 'bad' | 'idle' | 'info';

export function Badge(props: { tone: Tone; children: ComponentChildren; title?: string }) {
  return <span class={`badge ${props.tone}`} title={props.title}>{props.children}</span>;
}

export function Dot(props: { tone: Tone }) {
  return <span class={`dot ${props.tone}`} aria-hidden="true" />;
}

export function Card(props: { title?: ComponentChildren; tone?: Tone; actions?: ComponentChildren; children: ComponentChildren; class?: string; id?: string }) {
  return (
    <section class={`card ${props.tone ? `tone-${props.tone}` : ''} ${props.class ?? ''}`} id={props.id}>
      {props.title !== undefined && (
        <header class="card-head">
          <h2>{props.title}</h2>
          {props.actions && <div class="card-actions">{props.actions}</div>}
        </header>
      )}
      {props.children}
    </section>
  );
}

export function PageHead(props: { title: string; sub?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <div class="page-head">
      <div>
        <h1>{props.title}</h1>
        {props.sub && <p class="sub">{props.sub}</p>}
      </div>
      {props.actions && <div class="page-actions">{props.actions}</div>}
    </div>
  );
}

/** What an empty list means and what to do about it. */
export function Empty(props: { title: string; children?: ComponentChildren; icon?: string }) {
  return (
    <div class="empty">
      <div class="empty-icon" aria-hidden="true">{props.icon ?? '○'}</div>
      <p class="empty-title">{props.title}</p>
      {props.children && <div class="empty-body">{props.children}</div>}
    </div>
  );
}

export function ErrorBox(props: { error: ApiError | undefined; what?: string; onRetry?: () => void }) {
  const e = props.error;
  if (!e) return null;
  return (
    <div class="alert bad" role="alert">
      <div>
        <strong>{props.what ? `${props.what}: ` : ''}{e.message}</strong>
        {e.hint && <p class="hint">{e.hint}</p>}
        {e.code && <p class="code">{e.code}</p>}
      </div>
      {props.onRetry && <button class="btn small" onClick={props.onRetry}>Try again</button>}
    </div>
  );
}

export function Loading(props: { what: string }) {
  return <p class="loading" aria-busy="true"><span class="spinner" aria-hidden="true" /> Loading {props.what}…</p>;
}

/** "3 min ago", kept current, with the exact time on hover. */
export function Ago(props: { at: string | number | null | undefined }) {
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 15_000);
    return () => clearInterval(t);
  }, []);
  if (props.at === null || props.at === undefined) return <span class="muted">never</span>;
  return <time dateTime={typeof props.at === 'string' ? props.at : new Date(props.at).toISOString()} title={localTime(props.at)}>{ago(props.at)}</time>;
}

export function KV(props: { rows: [ComponentChildren, ComponentChildren][]; cols?: boolean }) {
  return (
    <dl class={`kv ${props.cols ? 'cols' : ''}`}>
      {props.rows.map(([k, v], i) => (
        <div key={i}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
