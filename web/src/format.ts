// Numbers and times the way an operator reads them: "3 min ago", "1.2 MB", "2 h 5 min".

export function ago(at: string | number | null | undefined, now = Date.now()): string {
  if (at === null || at === undefined || at === '') return 'never';
  const t = typeof at === 'number' ? at : Date.parse(at);
  if (Number.isNaN(t)) return String(at);
  const s = Math.round((now - t) / 1000);
  if (s < 5) return 'just now';
  if (s < 0) return 'just now';
  return `${duration(s)} ago`;
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
  return `${Math.floor(h / 24)} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '';
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB'];
  let v = n / 1000;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function localTime(at: string | number | null | undefined): string {
  if (at === null || at === undefined) return '';
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? String(at) : d.toLocaleString();
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function dbfs(v: unknown): string {
  return typeof v === 'number' && Number.isFinite(v) ? `${v.toFixed(0)} dBFS` : '—';
}
