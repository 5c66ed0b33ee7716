import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from '../api';

// The password form shown when the console listens beyond loopback. The daemon keeps only a hash of
// the password and rate-limits attempts; this page says how long to wait when it refused.

export function Login(props: { onLoggedIn: (csrf: string | undefined) => void }) {
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [wait, setWait] = useState(0);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    input.current?.focus();
    document.title = 'Log in · terminal-agent';
  }, []);
  useEffect(() => {
    if (wait <= 0) return;
    const t = setTimeout(() => setWait((w) => w - 1), 1000);
    return () => clearTimeout(t);
  }, [wait]);

  const submit = (e: Event) => {
    e.preventDefault();
    if (!password || busy || wait > 0) return;
    setBusy(true);
    setError(undefined);
    api.post<{ authenticated: boolean; csrf_token?: string }>('/api/login', { password }).then(
      (r) => props.onLoggedIn(r.csrf_token),
      (err: ApiError) => {
        setBusy(false);
        setError(err);
        setPassword('');
        if (err.status === 429) setWait(err.retryAfter ?? 30);
        input.current?.focus();
      },
    );
  };

  const message = !error
    ? undefined
    : error.status === 401
      ? 'That password is not right.'
      : error.status === 429
        ? `Too many attempts. Try again in ${wait > 0 ? `${wait} s` : 'a moment'}.`
        : error.message;

  return (
    <div class="login-wrap">
      <form class="login card" onSubmit={submit} method="post" action="/api/login" novalidate>
        <div class="login-brand"><img src="/assets/icon.svg" alt="" width="40" height="40" /><div><h1>terminal-agent</h1><p class="muted">{location.host}</p></div></div>
        <label for="password">Console password</label>
        <input id="password" ref={input} type="password" name="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} disabled={busy} required />
        {message && <p class="alert bad" role="alert" data-testid="login-error">{message}{error?.hint && error.status !== 401 && error.status !== 429 ? <span class="hint"> {error.hint}</span> : null}</p>}
        <button class="btn primary" type="submit" disabled={busy || !password || wait > 0}>{busy ? 'Checking…' : 'Log in'}</button>
        <p class="muted small">The password is set with <code>console.password_hash</code> in the agent's config (see <code>terminal-agent console hash-password</code> in the README).</p>
      </form>
    </div>
  );
}
