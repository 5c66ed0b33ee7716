import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, onUnauthorized, setCsrf, type Session } from './api';
import { closeEvents, useLiveState } from './events';
import { Login } from './pages/login';
import { Overview } from './pages/overview';
import { Faces } from './pages/faces';
import { Enrollment } from './pages/enrollment';
import { Speech } from './pages/speech';
import { Voice } from './pages/voice';
import { ErrorBox, Loading } from './ui';

// The shell: asks /api/session, shows the login form or the pages, and routes on the URL's hash
// (#/faces), so the daemon serves one index.html and needs no route table.

const PAGES = [
  { path: 'overview', label: 'Overview', view: Overview },
  { path: 'faces', label: 'Faces', view: Faces },
  { path: 'enrollment', label: 'Enrollment', short: 'Enroll', view: Enrollment },
  { path: 'speech', label: 'Speech', view: Speech },
  { path: 'voice', label: 'Voiceprints & speakers', short: 'Voice', view: Voice },
] as const;

function currentPath(): string {
  const p = location.hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  return PAGES.some((x) => x.path === p) ? p : 'overview';
}

function useRoute(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const on = () => {
      setPath(currentPath());
      window.scrollTo(0, 0);
    };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return path;
}

function LiveIndicator() {
  const s = useLiveState();
  const label = s === 'live' ? 'Live' : s === 'connecting' ? 'Connecting…' : 'Auto-refresh';
  const title = s === 'live' ? 'Updates arrive as they happen' : s === 'connecting' ? 'Connecting to the event stream' : 'No event stream from the daemon: the page asks again every few seconds';
  return <span class={`live ${s}`} title={title} data-testid="live"><span class="dot" aria-hidden="true" />{label}</span>;
}

function Shell(props: { session: Session; onLogout: () => void }) {
  const path = useRoute();
  const page = PAGES.find((p) => p.path === path) ?? PAGES[0];
  const View = page.view;
  useEffect(() => {
    document.title = `${page.label} · terminal-agent`;
  }, [page]);
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/overview"><img src="/assets/icon.svg" alt="" width="24" height="24" /><span>terminal-agent</span></a>
        <nav class="tabs" aria-label="Pages">
          {PAGES.map((p) => (
            <a key={p.path} href={`#/${p.path}`} class={p.path === path ? 'active' : ''} aria-current={p.path === path ? 'page' : undefined}>
              <span class="long">{p.label}</span><span class="short">{'short' in p ? p.short : p.label}</span>
            </a>
          ))}
        </nav>
        <div class="top-right">
          <LiveIndicator />
          {props.session.login_required && <button class="btn ghost small" onClick={props.onLogout}>Log out</button>}
        </div>
      </header>
      <main id="main" data-page={path}>
        <View />
      </main>
    </div>
  );
}

function App() {
  const [session, setSession] = useState<Session | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);

  const loadSession = () => {
    setError(undefined);
    api.get<Session>('/api/session').then(
      (s) => {
        setCsrf(s.csrf_token);
        setSession(s);
      },
      (e: ApiError) => setError(e),
    );
  };

  useEffect(() => {
    onUnauthorized(() => {
      closeEvents();
      setSession((s) => (s ? { ...s, authenticated: false, csrf_token: undefined } : s));
    });
    loadSession();
  }, []);

  const logout = () => {
    api.post('/api/logout').finally(() => {
      closeEvents();
      setCsrf(undefined);
      setSession((s) => (s ? { ...s, authenticated: false } : s));
    });
  };

  if (error) return <div class="center"><ErrorBox error={error} what="Cannot open the console" onRetry={loadSession} /></div>;
  if (!session) return <div class="center"><Loading what="the console" /></div>;
  if (session.login_required && !session.authenticated) {
    return <Login onLoggedIn={(csrf) => {
      setCsrf(csrf);
      setSession({ ...session, authenticated: true, csrf_token: csrf });
    }} />;
  }
  return <Shell session={session} onLogout={logout} />;
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
