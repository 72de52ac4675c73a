// Calls to /ui/api: the bearer token (kept for this tab in sessionStorage) goes with each call, an
// error becomes an ApiError with the server's own message, and a 401 tells the app to sign in again.
const TOKEN_KEY = 'mcp-memory-token';
const BASE = '/ui/api';

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code || null;
  }
}

let unauthorized = () => {};

export function onUnauthorized(handler) {
  unauthorized = handler;
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const token = getToken();
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const message = body ? body.error_description || body.error || '' : response.statusText;
  const code = body && body.error_description ? body.error : null;
  return new ApiError(response.status, message, code);
}

/** JSON in, JSON out. `query` values that are empty are left out. */
export async function call(path, { method = 'GET', query, body, raw, rawType = 'application/json', quiet401 = false } = {}) {
  let url = `${BASE}${path}`;
  if (query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
    }
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  const init = { method, headers: headers({ Accept: 'application/json' }), credentials: 'same-origin' };
  if (raw !== undefined) {
    init.body = raw;
    init.headers['Content-Type'] = rawType;
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  const response = await fetch(url, init);
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401 && !quiet401) unauthorized(error);
    throw error;
  }
  return response.json();
}

/** The export file as a Blob and the name the server gives it. */
export async function download(path) {
  const response = await fetch(`${BASE}${path}`, { headers: headers(), credentials: 'same-origin' });
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401) unauthorized(error);
    throw error;
  }
  const disposition = response.headers.get('content-disposition') || '';
  const match = /filename="([^"]+)"/.exec(disposition);
  return { blob: await response.blob(), filename: match ? match[1] : 'memories.json' };
}
