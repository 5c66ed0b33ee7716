import { httpError } from './http.js';

// The voice catalogue behind GET /tts: enough voices across languages, genders, providers and tags
// that every filter, their combinations and paging can be exercised.

export interface Voice {
  name: string;
  voice: string;
  language: string;
  gender: 'male' | 'female';
  provider: string;
  tags: string[];
  age: 'child' | 'adult' | 'senior';
  sample_rate: number;
  description: string;
}

type Row = [voice: string, name: string, language: string, gender: 'male' | 'female', provider: string, tags: string, age?: Voice['age']];

const ROWS: Row[] = [
  ['zh_female_xiaoyan', 'Xiaoyan', 'chinese', 'female', 'baidu', 'assistant,gentle'],
  ['zh_male_xiaoyu', 'Xiaoyu', 'chinese', 'male', 'baidu', 'news,calm'],
  ['zh_female_duxiaomei', 'Du Xiaomei', 'chinese', 'female', 'baidu', 'customer-service,warm'],
  ['zh_male_duxiaoyao', 'Du Xiaoyao', 'chinese', 'male', 'baidu', 'story,emotional'],
  ['zh_child_duyaya', 'Du Yaya', 'chinese', 'female', 'baidu', 'child,lively', 'child'],
  ['zh_female_tianmei', 'Tianmei', 'chinese', 'female', 'bytedance', 'lively,sweet'],
  ['zh_male_yangguang', 'Yangguang Qingnian', 'chinese', 'male', 'bytedance', 'lively,young'],
  ['zh_female_zhixing', 'Zhixing Nvsheng', 'chinese', 'female', 'bytedance', 'news,broadcast'],
  ['zh_male_wennuan', 'Wennuan Ahu', 'chinese', 'male', 'bytedance', 'warm,story'],
  ['zh_senior_laoyeye', 'Lao Yeye', 'chinese', 'male', 'bytedance', 'story,calm', 'senior'],
  ['zh_female_zhiyan', 'Zhiyan', 'chinese', 'female', 'aliyun', 'assistant,customer-service'],
  ['zh_male_zhiming', 'Zhiming', 'chinese', 'male', 'aliyun', 'assistant,calm'],
  ['zh_female_aixia', 'Aixia', 'chinese', 'female', 'aliyun', 'gentle,story'],
  ['zh_male_aicheng', 'Aicheng', 'chinese', 'male', 'aliyun', 'news,broadcast'],
  ['zh_female_xiaoxiao', 'Xiaoxiao', 'chinese', 'female', 'microsoft', 'assistant,warm'],
  ['zh_male_yunxi', 'Yunxi', 'chinese', 'male', 'microsoft', 'story,lively'],
  ['zh_female_xiaoyi', 'Xiaoyi', 'chinese', 'female', 'tencent', 'customer-service,gentle'],
  ['zh_male_zhiyun', 'Zhiyun', 'chinese', 'male', 'tencent', 'news,calm'],
  ['yue_female_xiaoman', 'Xiaoman', 'cantonese', 'female', 'aliyun', 'assistant,dialect'],
  ['yue_male_wanlung', 'WanLung', 'cantonese', 'male', 'microsoft', 'news,dialect'],
  ['en_female_emma', 'Emma', 'english', 'female', 'microsoft', 'assistant,warm'],
  ['en_male_guy', 'Guy', 'english', 'male', 'microsoft', 'news,broadcast'],
  ['en_female_aria', 'Aria', 'english', 'female', 'microsoft', 'customer-service,lively'],
  ['en_male_davis', 'Davis', 'english', 'male', 'microsoft', 'calm,story'],
  ['en_gb_female_sonia', 'Sonia', 'english', 'female', 'microsoft', 'news,british'],
  ['en_gb_male_ryan', 'Ryan', 'english', 'male', 'microsoft', 'assistant,british'],
  ['en_female_olivia', 'Olivia', 'english', 'female', 'aliyun', 'assistant,gentle'],
  ['en_male_harry', 'Harry', 'english', 'male', 'aliyun', 'story,warm'],
  ['en_female_skye', 'Skye', 'english', 'female', 'bytedance', 'lively,young'],
  ['en_male_adam', 'Adam', 'english', 'male', 'bytedance', 'news,calm'],
  ['en_child_lily', 'Lily', 'english', 'female', 'bytedance', 'child,story', 'child'],
  ['en_female_kathy', 'Kathy', 'english', 'female', 'baidu', 'customer-service,warm'],
  ['ja_female_nanami', 'Nanami', 'japanese', 'female', 'microsoft', 'assistant,gentle'],
  ['ja_male_keita', 'Keita', 'japanese', 'male', 'microsoft', 'news,calm'],
  ['ja_female_tomoka', 'Tomoka', 'japanese', 'female', 'aliyun', 'story,lively'],
  ['ja_male_daiki', 'Daiki', 'japanese', 'male', 'bytedance', 'young,lively'],
  ['ko_female_sunhi', 'SunHi', 'korean', 'female', 'microsoft', 'assistant,warm'],
  ['ko_male_injoon', 'InJoon', 'korean', 'male', 'microsoft', 'news,calm'],
  ['ko_female_jiyu', 'Jiyu', 'korean', 'female', 'aliyun', 'customer-service,gentle'],
  ['fr_female_denise', 'Denise', 'french', 'female', 'microsoft', 'assistant,gentle'],
  ['fr_male_henri', 'Henri', 'french', 'male', 'microsoft', 'news,calm'],
  ['de_female_katja', 'Katja', 'german', 'female', 'microsoft', 'assistant,calm'],
  ['de_male_conrad', 'Conrad', 'german', 'male', 'microsoft', 'news,broadcast'],
  ['es_female_elvira', 'Elvira', 'spanish', 'female', 'microsoft', 'assistant,warm'],
  ['es_male_alvaro', 'Alvaro', 'spanish', 'male', 'aliyun', 'story,calm'],
  ['ru_female_svetlana', 'Svetlana', 'russian', 'female', 'microsoft', 'news,calm'],
  ['it_male_diego', 'Diego', 'italian', 'male', 'microsoft', 'assistant,lively'],
];

export const VOICES: readonly Voice[] = ROWS.map(([voice, name, language, gender, provider, tags, age]) => ({
  name, voice, language, gender, provider, tags: tags.split(','), age: age ?? 'adult',
  sample_rate: provider === 'microsoft' ? 24000 : 16000,
  description: `${name}: ${age ?? 'adult'} ${gender} ${language} voice by ${provider} (${tags.replace(/,/g, ', ')})`,
}));

const ESPEAK_LANG: Record<string, string> = {
  chinese: 'cmn', cantonese: 'yue', english: 'en-us', japanese: 'ja', korean: 'ko', french: 'fr-fr', german: 'de', spanish: 'es', russian: 'ru', italian: 'it',
};

/** The espeak-ng voice that speaks a catalogue voice's language (en-gb for British voices). */
export function espeakVoiceFor(v: Voice | undefined): string {
  if (!v) return 'en-us';
  if (v.tags.includes('british')) return 'en-gb';
  return ESPEAK_LANG[v.language] ?? 'en-us';
}

export function findVoice(id: string): Voice | undefined {
  return VOICES.find((v) => v.voice === id);
}

/** Fuzzy name match: case-insensitive substring of name or voice id, or every word of the query found in them. */
export function nameMatches(v: Voice, query: string): boolean {
  const hay = `${v.name} ${v.voice}`.toLowerCase();
  const q = query.trim().toLowerCase();
  if (q === '') return true;
  if (hay.includes(q) || hay.replace(/[\s_-]/g, '').includes(q.replace(/[\s_-]/g, ''))) return true;
  return q.split(/[\s,_-]+/).filter(Boolean).every((tok) => hay.includes(tok));
}

function intParam(q: URLSearchParams, name: string, def: number): number {
  const raw = q.get(name);
  if (raw === null || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw httpError(400, `${name} must be a non-negative integer, got '${raw}'`);
  return Number(raw);
}

function boolParam(q: URLSearchParams, name: string): boolean {
  const raw = (q.get(name) ?? '').toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw httpError(400, `${name} must be true or false, got '${q.get(name)}'`);
}

/** Answers GET /tts: filters (all combinable, case-insensitive), then skip/top paging. */
export function listVoices(q: URLSearchParams): { speakers: Record<string, unknown>[]; speakers_count: number; total_speakers_count: number } {
  const eq = (a: string, b: string | null) => b === null || b.trim() === '' || a.toLowerCase() === b.trim().toLowerCase();
  const gender = q.get('gender');
  if (gender && !['male', 'female'].includes(gender.toLowerCase())) throw httpError(400, `gender must be male or female, got '${gender}'`);
  const tags = (q.get('tags') ?? '').split(',').map((t) => t.trim().toLowerCase()).filter(Boolean);
  const skip = intParam(q, 'skip', 0);
  const top = intParam(q, 'top', 10);
  const all = boolParam(q, 'all');
  const name = q.get('name');
  const matching = VOICES.filter((v) => eq(v.language, q.get('language')) && eq(v.gender, gender) && eq(v.provider, q.get('provider'))
    && (name === null || nameMatches(v, name)) && tags.every((t) => v.tags.includes(t)));
  const page = matching.slice(skip, skip + top).map((v) => (all ? { ...v, tags: [...v.tags] } : { name: v.name, voice: v.voice }));
  return { speakers: page, speakers_count: page.length, total_speakers_count: matching.length };
}
