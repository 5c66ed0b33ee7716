import { useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, api, query } from '../api';
import { useEvents } from '../events';
import { useResource } from '../resource';
import type { Voice } from '../types';
import { Badge, Card, Empty, ErrorBox, Loading, PageHead } from '../ui';

// Say a phrase on the terminal's speaker (through the daemon's speech queue, as `terminal-agent say`
// does) or play it here in the browser; pick the voice from the catalogue with its filters.

/** A ratio the operator has not moved is not sent: the terminal's configured tts.*_ratio applies. */
interface Ratios {
  volume?: number;
  speed?: number;
  pitch?: number;
}

function Slider(props: { label: string; value: number | undefined; onChange: (v: number | undefined) => void }) {
  const id = `r-${props.label.toLowerCase()}`;
  return (
    <div class="slider">
      <label for={id}>{props.label}{' '}
        <span class="muted">{props.value ?? 'as configured'}</span>
        {props.value !== undefined && <button type="button" class="link small" onClick={() => props.onChange(undefined)} aria-label={`Reset ${props.label.toLowerCase()}`}>reset</button>}
      </label>
      <input id={id} type="range" min="0" max="100" step="1" value={props.value ?? 50} onInput={(e) => props.onChange(Number(e.currentTarget.value))} />
    </div>
  );
}

function uniq(values: (string | undefined)[]): string[] {
  return [...new Set(values.filter((v): v is string => !!v))].sort();
}

function Catalogue(props: { voices: Voice[]; selected: string; onPick: (v: string) => void }) {
  const [f, setF] = useState({ language: '', gender: '', provider: '', tag: '', name: '' });
  const langs = useMemo(() => uniq(props.voices.map((v) => v.language)), [props.voices]);
  const genders = useMemo(() => uniq(props.voices.map((v) => v.gender)), [props.voices]);
  const providers = useMemo(() => uniq(props.voices.map((v) => v.provider)), [props.voices]);
  const tags = useMemo(() => uniq(props.voices.flatMap((v) => v.tags ?? [])), [props.voices]);
  const n = f.name.trim().toLowerCase();
  const shown = props.voices.filter((v) => (!f.language || v.language === f.language) && (!f.gender || v.gender === f.gender) && (!f.provider || v.provider === f.provider)
    && (!f.tag || (v.tags ?? []).includes(f.tag)) && (!n || v.name.toLowerCase().includes(n) || v.voice.toLowerCase().includes(n)));
  const sel = (key: keyof typeof f, label: string, options: string[]) => (
    <label class="filter">{label}
      <select value={f[key]} onChange={(e) => setF({ ...f, [key]: e.currentTarget.value })} aria-label={`Filter by ${label.toLowerCase()}`}>
        <option value="">any</option>
        {options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    </label>
  );
  const any = Object.values(f).some(Boolean);
  return (
    <Card title={<>Voice catalogue <Badge tone="idle">{shown.length} of {props.voices.length}</Badge></>} class="wide" id="catalogue">
      <div class="filters">
        <label class="filter grow">Name<input type="search" value={f.name} placeholder="Emma, news…" onInput={(e) => setF({ ...f, name: e.currentTarget.value })} aria-label="Filter by name" /></label>
        {sel('language', 'Language', langs)}
        {sel('gender', 'Gender', genders)}
        {sel('provider', 'Provider', providers)}
        {sel('tag', 'Tag', tags)}
        {any && <button class="btn small ghost" onClick={() => setF({ language: '', gender: '', provider: '', tag: '', name: '' })}>Clear</button>}
      </div>
      {shown.length === 0 ? <Empty title="No voice matches these filters" icon="♪" /> : (
        <div class="table-wrap">
          <table class="table voices" data-testid="voices">
            <thead><tr><th>Voice</th><th>Language</th><th class="hide-s">Gender</th><th class="hide-s">Provider</th><th class="hide-s">Tags</th><th /></tr></thead>
            <tbody>
              {shown.map((v) => (
                <tr key={v.voice} class={v.voice === props.selected ? 'selected' : ''}>
                  <td><strong>{v.name}</strong><br /><code class="small">{v.voice}</code></td>
                  <td>{v.language}</td>
                  <td class="hide-s">{v.gender}{v.age && v.age !== 'adult' ? ` (${v.age})` : ''}</td>
                  <td class="hide-s">{v.provider}</td>
                  <td class="hide-s">{(v.tags ?? []).map((t) => <span key={t} class="tag">{t}</span>)}</td>
                  <td class="num"><button class="btn small" onClick={() => props.onPick(v.voice)} disabled={v.voice === props.selected}>{v.voice === props.selected ? 'Selected' : 'Use'}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}

export function Speech() {
  const voices = useResource<{ voices: Voice[]; total: number }>('/api/voices');
  const [text, setText] = useState('');
  const [voice, setVoice] = useState('');
  const [r, setR] = useState<Ratios>({});
  const [busy, setBusy] = useState<'say' | 'play' | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [said, setSaid] = useState<string | undefined>(undefined);
  const [speaking, setSpeaking] = useState(false);
  const player = useRef<HTMLAudioElement>(null);

  useEvents(['speech.started', 'speech.finished'], (e) => setSpeaking(e.type === 'speech.started'));

  const params = () => ({ text: text.trim(), voice: voice || undefined, volume: r.volume, speed: r.speed, pitch: r.pitch });

  const say = async (e: Event) => {
    e.preventDefault();
    if (!text.trim()) return;
    setBusy('say');
    setError(undefined);
    setSaid(undefined);
    try {
      const res = await api.post<{ outcome?: string; source?: string; audio_ms?: number }>('/api/say', params());
      const length = typeof res?.audio_ms === 'number' ? `${(res.audio_ms / 1000).toFixed(1)} s` : '';
      const from = res?.source === 'cache' ? 'from the cache' : res?.source === 'service' ? 'from the service' : '';
      const detail = [length, from].filter(Boolean).join(', ');
      setSaid(res?.outcome === 'interrupted' ? 'Interrupted on the terminal by another phrase.' : `Played on the terminal${detail ? ` (${detail})` : ''}.`);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(undefined);
    }
  };

  const playHere = async () => {
    if (!text.trim() || !player.current) return;
    setBusy('play');
    setError(undefined);
    setSaid(undefined);
    const a = player.current;
    a.src = `/api/tts${query(params())}`;
    try {
      await a.play();
    } catch {
      // The media element reports nothing useful; ask the same URL for the error body.
      await api.get(`/api/tts${query(params())}`).catch((err: ApiError) => setError(err));
    } finally {
      setBusy(undefined);
    }
  };

  const list = voices.data?.voices ?? [];
  const chosen = list.find((v) => v.voice === voice);
  return (
    <div data-ready={voices.data ? 'speech' : undefined}>
      <PageHead title="Speech" sub="Say a phrase on the terminal's speaker, or hear it here first." actions={speaking ? <Badge tone="info">the terminal is speaking</Badge> : undefined} />
      <div class="grid">
        <Card title="Say a phrase" class="wide">
          <form class="say" onSubmit={(e) => void say(e)}>
            <label for="say-text">Text</label>
            <textarea id="say-text" rows={3} maxLength={1000} placeholder="Welcome! Please look at the camera." value={text} onInput={(e) => setText(e.currentTarget.value)} />
            <div class="say-row">
              <label class="filter grow">Voice
                <select value={voice} onChange={(e) => setVoice(e.currentTarget.value)} aria-label="Voice">
                  <option value="">the configured default</option>
                  {list.map((v) => <option key={v.voice} value={v.voice}>{v.name} · {v.language}{v.provider ? ` · ${v.provider}` : ''}</option>)}
                </select>
              </label>
              <Slider label="Volume" value={r.volume} onChange={(v) => setR({ ...r, volume: v })} />
              <Slider label="Speed" value={r.speed} onChange={(v) => setR({ ...r, speed: v })} />
              <Slider label="Pitch" value={r.pitch} onChange={(v) => setR({ ...r, pitch: v })} />
            </div>
            {chosen?.description && <p class="muted small">{chosen.description}</p>}
            <div class="buttons">
              <button class="btn primary" type="submit" disabled={!text.trim() || !!busy}>{busy === 'say' ? 'Speaking on the terminal…' : 'Say on the terminal'}</button>
              <button class="btn" type="button" onClick={() => void playHere()} disabled={!text.trim() || !!busy}>{busy === 'play' ? 'Fetching…' : 'Play in this browser'}</button>
            </div>
            <audio ref={player} controls class={player.current?.src ? '' : 'hidden'} data-testid="player" />
            {said && <p class="alert ok small" role="status">{said}</p>}
            <ErrorBox error={error} />
          </form>
        </Card>
        {voices.data ? <Catalogue voices={list} selected={voice} onPick={(v) => { setVoice(v); document.getElementById('say-text')?.focus(); }} />
          : voices.error ? <ErrorBox error={voices.error} what="Cannot read the voice catalogue" onRetry={voices.reload} /> : <Loading what="the voice catalogue" />}
      </div>
    </div>
  );
}
